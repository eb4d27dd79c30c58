"""The report's declared rows: every column a table shows is declared once (tebench.report.rows), and the
frames the tables are built from have exactly the declared columns, in declaration order."""

from __future__ import annotations

from pathlib import Path

import pytest

from tebench.report import columns as specs, rows, tables
from tebench.report.load import load_all

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CASE_TABLE = rows.columns(rows.CaseRow, rows.Baselines, rows.CaseMarks)


@pytest.mark.parametrize("name,spec,declared", [
    ("CASE_COLUMNS", tables.CASE_COLUMNS, CASE_TABLE),
    ("PARITY_COLUMNS", tables.PARITY_COLUMNS, CASE_TABLE),
    ("BUSY_COLUMNS", specs.BUSY_COLUMNS, CASE_TABLE),
    ("HEADLINE_COLUMNS", specs.HEADLINE_COLUMNS, rows.columns(rows.HeadlineRow)),
])
def test_every_column_a_table_shows_is_declared(name, spec, declared):
    assert [c for c, _, _ in spec if c not in declared] == [], name


@pytest.mark.parametrize("fixture", ["cpu-smoke.jsonl", "h200-torchao-d2048.jsonl", "h200-crossover.jsonl"])
def test_the_case_and_headline_frames_have_the_declared_columns_in_order(fixture):
    df = tables.case_frame(load_all([FIXTURES / fixture]))
    energy_dropped = [c for c in rows.ENERGY_COLUMNS if c not in df.columns]
    case_row = [c for c in rows.columns(rows.CaseRow) if c not in energy_dropped]
    assert list(df.columns) == case_row + list(rows.columns(rows.Baselines))
    head = tables.headline(df)
    declared = rows.columns(rows.HeadlineRow)
    assert list(head.columns) == [c for c in declared if c in head.columns]
    # torchao's columns come as a group: all of them or none
    ao = set(rows.columns(rows.AoFp8))
    assert not (ao & set(head.columns)) or ao <= set(head.columns)


def test_a_frame_of_no_rows_is_empty():
    assert rows.frame([]).empty and rows.headline_frame([]).empty
