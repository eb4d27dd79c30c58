"""A stored run kept as ``results.jsonl.gz`` reads as the text it holds; a damaged one is refused by name."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import FIXTURES
from tebench import bounded
from tebench.store import reader

CPU = FIXTURES / "cpu-smoke.jsonl"


def test_a_gzip_results_file_reads_as_its_text(tmp_path):
    packed = tmp_path / "results.jsonl.gz"
    packed.write_bytes(gzip.compress(CPU.read_bytes()))
    plain, compressed = reader.read(CPU), reader.read(packed)
    assert [r.case_id for r in compressed.cases] == [r.case_id for r in plain.cases]
    assert compressed.header == plain.header


def test_a_run_directory_holding_only_the_compressed_file(tmp_path):
    (tmp_path / "results.jsonl.gz").write_bytes(gzip.compress(CPU.read_bytes()))
    assert reader.results_path(tmp_path) == tmp_path / "results.jsonl.gz"
    (tmp_path / "results.jsonl").write_bytes(CPU.read_bytes())
    assert reader.results_path(tmp_path) == tmp_path / "results.jsonl"  # the plain file wins


def test_a_truncated_gzip_file_is_refused_naming_it(tmp_path):
    data = gzip.compress(CPU.read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(bounded.InputError, match="gzip stream is damaged"):
        list(bounded.iter_lines(cut))


def test_the_limit_bounds_the_decompressed_bytes(tmp_path):
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress((json.dumps({"type": "case"}) + "\n").encode() * 20_000))
    assert bomb.stat().st_size < 10_000
    with pytest.raises(bounded.InputError, match="grew beyond"):
        list(bounded.iter_lines(bomb, limit=100_000))


def test_a_file_of_more_lines_than_records_fit_is_refused_naming_the_count(tmp_path):
    """Billions of blank lines gzip into a few MB, and each costs the line loop its time: the count is bounded."""
    bomb = tmp_path / "blank.jsonl.gz"
    bomb.write_bytes(gzip.compress((FIXTURES / "cpu-smoke.jsonl").read_bytes().splitlines(True)[0] + b"\n" * 50))
    assert len(list(bounded.iter_lines(bomb, max_lines=51))) == 51
    with pytest.raises(bounded.InputError, match=r"holds more than 50 lines"):
        list(bounded.iter_lines(bomb, max_lines=50))
