"""A case whose rounds disagree on loss parity shows its worst round's verdict, in the report and in compare: a
round that failed (a fault in one round, a run resumed without it) is never hidden by a later round that passed."""

from __future__ import annotations

import copy

import pytest

from conftest import FIXTURES
from conftest import read_jsonl as lines
from conftest import write_jsonl as write
from tebench import cli
from tebench.analysis import parity

CPU = FIXTURES / "cpu-smoke.jsonl"
CASE = "gpt/tiny/PT-AMP"


def _two_rounds(tmp_path, first: str, second: str):
    """cpu-smoke with CASE run twice: round 0 stored with verdict ``first``, round 1 with ``second`` (this
    tebench's rules, so neither is judged again)."""
    records = lines(CPU)
    i = next(i for i, r in enumerate(records) if r.get("case_id") == CASE)
    rounds = [records[i], copy.deepcopy(records[i])]
    for n, (rec, verdict) in enumerate(zip(rounds, (first, second))):
        rec["round"] = n
        rec["parity"].update(verdict=verdict, rules=parity.PARITY_RULES,
                             reason=f"round {n}'s own reason: loss moved" if verdict != "pass" else None)
    records[i:i + 1] = rounds
    return write(tmp_path / f"{first}-{second}.jsonl", records)


def _row(md: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| {CASE} |"))


@pytest.mark.parametrize("first,second", [("fail", "pass"), ("pass", "fail"), ("inconclusive", "pass")])
def test_the_worst_round_speaks_for_the_case_in_the_report(tmp_path, capsys, first, second):
    path = _two_rounds(tmp_path, first, second)
    assert cli.main(["report", str(path), "--out", str(tmp_path / "rep")]) == 0, capsys.readouterr().err
    md = (tmp_path / "rep" / "report.md").read_text()
    worst = "fail" if "fail" in (first, second) else "inconclusive"
    assert f"| {worst} |" in _row(md), _row(md)
    bad = 0 if first == worst else 1
    # Which round, and what the other said, beside the reason.
    assert f"round {bad} (round {1 - bad} pass): round {bad}'s own reason" in md


def test_a_round_that_passed_before_failing_ones_is_no_pass(tmp_path, capsys):
    assert cli.main(["compare", str(CPU), str(_two_rounds(tmp_path, "fail", "pass"))]) == 1
    out = capsys.readouterr().out
    assert "loss parity pass → fail" in out, out


def test_rounds_that_agree_show_as_before(tmp_path, capsys):
    path = _two_rounds(tmp_path, "pass", "pass")
    assert cli.main(["report", str(path), "--out", str(tmp_path / "rep")]) == 0
    row = _row((tmp_path / "rep" / "report.md").read_text())
    assert "| pass |" in row and "round 0" not in row


def test_a_round_measured_twice_in_one_run_is_said(tmp_path):
    """Two ok records of one (case, round) in one run: a run never writes them, so the file was edited or joined by
    hand; the later is used, and the dropped measurement is named with its lines."""
    import warnings

    from tebench.analysis import judged_run

    records = lines(CPU)
    i = next(i for i, r in enumerate(records) if r.get("case_id") == CASE)
    again = copy.deepcopy(records[i])
    again["timing"]["samples_ms"] = [10 * s for s in again["timing"]["samples_ms"]]
    records.insert(i + 1, again)
    path = write(tmp_path / "twice.jsonl", records)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = judged_run.read(path)
    said = [str(w.message) for w in caught if "measured twice" in str(w.message)]
    assert said and f"{CASE} round 0, lines {i + 1} and {i + 2}" in said[0], said
    kept = next(r for r in run.cases if r.case_id == CASE)
    assert kept.samples_ms == again["timing"]["samples_ms"]
    with warnings.catch_warnings(record=True) as caught:  # an ordinary file says nothing of it
        warnings.simplefilter("always")
        judged_run.read(CPU)
    assert not [w for w in caught if "measured twice" in str(w.message)]
