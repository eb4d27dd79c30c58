"""[[exclude]] rules keep their reason: counted by expansion, shown by ``tebench list``,
recorded in the run header and shown in the report's run information."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import read_jsonl, unsaid
from tebench.plan import matrix
from tebench.store import reader as results
from tebench.schema.version import RecordError
from tebench.plan.matrix import Exclusion, exclusion_text, expand
from tebench.report import reproduce
from tebench.schema.records import RunHeader
from tebench.report.load import load

# 8 cases before exclusion: PT-FP32, PT-AMP, and TE-FP8 with delayed (2 formats x 2
# histories) and current (2 formats). The second rule overlaps the first in one case
# (current.HYBRID), which counts for the first rule only.
MATRIX = """
name = "excl"
[settings]
steps = 3
warmup = 1
[axes]
modes = ["PT-FP32", "PT-AMP", "TE-FP8"]
[fp8]
recipes = ["delayed", "current"]
formats = ["E4M3", "HYBRID"]
amax_history_len = [16, 1024]
[sizes.gpt.micro]
vocab = 16
d_model = 32
heads = 2
layers = 1
ffn = 64
seq = 8
batch = 2

[[exclude]]
recipe = "current"
reason = "current scaling runs in another matrix"

[[exclude]]
mode = "TE-FP8"
format = "HYBRID"
"""


@pytest.fixture
def path(tmp_path) -> Path:
    p = tmp_path / "m.toml"
    p.write_text(textwrap.dedent(MATRIX))
    return p


def test_expansion_counts_what_each_rule_removed(path):
    out = expand(matrix.load(path))
    assert [c.id for c in out.cases] == [
        "gpt/micro/PT-FP32", "gpt/micro/PT-AMP",
        "gpt/micro/TE-FP8/delayed.E4M3.h16.max", "gpt/micro/TE-FP8/delayed.E4M3.h1024.max",
    ]
    assert out.excluded == [
        Exclusion({"recipe": "current"}, "current scaling runs in another matrix", 2),
        Exclusion({"mode": "TE-FP8", "format": "HYBRID"}, None, 2),
    ]
    assert [c.id for c in matrix.iter_cases(matrix.load(path))] == [c.id for c in out.cases]


def test_exclusion_text():
    text = exclusion_text({"rule": {"mode": ["PT-AMP", "TE-FP8"], "graphs": True}, "reason": "slow", "cases": 3})
    assert unsaid(text, "mode=[PT-AMP, TE-FP8]", "graphs=true", "3 case(s)", "slow") == [], text
    text = exclusion_text({"rule": {"size": "a"}, "reason": None, "cases": 0})
    assert unsaid(text, "size=a", "0 case(s)", "no reason") == [], text


def test_list_shows_each_rule_after_the_cases(path, stub_cli):
    lines = stub_cli("list", str(path), check=True).stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "[[exclude]]" in line)
    assert unsaid(lines[at], "excluded", "4 case(s)") == [], lines[at]
    assert " skipped; about " in lines[at - 1]  # after the cases and their summary (with the total)
    rules = lines[at + 1:]
    assert len(rules) == 2, rules
    assert unsaid(rules[0], "recipe=current", "2 case(s)", "current scaling runs in another matrix") == []
    assert unsaid(rules[1], "mode=TE-FP8 format=HYBRID", "2 case(s)", "no reason") == []


def test_run_header_records_them_and_the_report_shows_them(path, tmp_path, stub_cli):
    stub_cli("run", str(path), "--out", str(tmp_path / "run"), "--no-report", check=True)
    header = read_jsonl(tmp_path / "run" / "results.jsonl")[0]
    assert header["excluded"] == [
        {"rule": {"recipe": "current"}, "reason": "current scaling runs in another matrix", "cases": 2},
        {"rule": {"mode": "TE-FP8", "format": "HYBRID"}, "reason": None, "cases": 2},
    ]
    rows = dict(reproduce(load(tmp_path / "run")))
    assert unsaid(rows["excluded by the matrix"], "recipe=current: 2 case(s)", "current scaling runs in another matrix",
                  "mode=TE-FP8 format=HYBRID: 2 case(s)", "no reason") == []
    # A header from before exclusions were recorded has no such row.
    src = load(tmp_path / "run")
    src.header = RunHeader.from_dict({k: v for k, v in header.items() if k != "excluded"})
    assert "excluded by the matrix" not in dict(reproduce(src))


@pytest.mark.parametrize("bad", [
    "not a list", [{"rule": "mode=x", "reason": None, "cases": 1}],
    [{"rule": {}, "reason": 3, "cases": 1}], [{"rule": {}, "reason": None, "cases": True}],
])
def test_a_malformed_excluded_header_is_refused(bad):
    header = {"type": "header", "run_id": "r", "excluded": bad}
    with pytest.raises(RecordError, match="excluded"):
        results.parse_record(header)
