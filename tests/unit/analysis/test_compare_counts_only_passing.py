"""compare, ab and history count a gain only for a case that may back a speed claim in the report.

The rule is ``parity.counts_for_speed`` on the head side (the record-level form of
``report.tables.counts``): a case that does not pass loss parity, or whose FP8 proof is partial
or no-fp8, keeps its time verdict, but the verdict is flagged and not counted; a slowdown still fails.
"""

from __future__ import annotations

import json

import pytest

from tebench.analysis import judged_run
from tebench.analysis import compare as cmp
from tebench.analysis.compare import compare
from tebench.report.compare_markdown import to_markdown
from tebench.analysis.parity import counts_for_speed
from history_runs import nightly
from tebench.analysis.history_latest import latest_vs_recent
from tebench.report.history_page import history_headline
from tebench.cli.history import report
from tebench.store import history
from tests.unit.analysis.test_compare import AMP, delta, multi_round

PARITY_FLAG = "not counted: parity fail (the speed of a model that does not train the same is not a gain)"


def _edit(parity: str | None = None, fp8_proof: str | None = None):
    def edit(r: dict) -> None:
        if r["case_id"] == AMP:
            if parity is not None:
                r["parity"] = {"verdict": parity, "reason": "test"}
            if fp8_proof is not None:
                r["fp8_proof"] = {"verdict": fp8_proof}
            r["status"] = "ok"
    return edit


@pytest.fixture
def pinned(monkeypatch):
    """Parity is judged again from the curves on read; pin the verdicts the records carry."""
    monkeypatch.setattr(cmp.judged_run.parity_rules, "attach", lambda records, only=None: None)


def _compared_pair(tmp_path, factor: float, base: dict, head: dict):
    b = multi_round(tmp_path, "base.jsonl", seed=1, round_sd=0.002, step_sd=0.003, edit=_edit(**base))
    h = multi_round(tmp_path, "head.jsonl", seed=2, round_sd=0.002, step_sd=0.003, factor={AMP: factor},
                    edit=_edit(**head))
    return compare(b, h)


def test_a_faster_case_failing_parity_is_not_counted_as_improved(tmp_path, pinned):
    result = _compared_pair(tmp_path, 0.8, {"parity": "fail"}, {"parity": "fail"})
    d = delta(result)
    # The time verdict stays visible, flagged with the reason; it is not counted.
    assert d.verdict == "improved" and d.time_ratio < 0.85
    assert d.counted is False and d.not_counted and PARITY_FLAG in d.flags
    assert result.count("improved") == 0 and result.count("faster") == 0 and result.not_counted == [d]
    assert result.exit_code == 0
    md = to_markdown(result)
    first = md.splitlines()[0]
    assert "0 improved" in first and "1 gain(s) not counted" in first
    assert "improved (not counted)" in md
    data = json.loads(result.to_json())
    assert data["summary"]["improved"] == 0 and data["not_counted"] == 1


def test_a_faster_case_passing_parity_is_improved_as_before(tmp_path, pinned):
    result = _compared_pair(tmp_path, 0.8, {"parity": "pass"}, {"parity": "pass"})
    d = delta(result)
    assert d.verdict == "improved" and d.counted and not d.not_counted
    assert not any(f.startswith("not counted") for f in d.flags)
    assert result.count("improved") == 1 and not result.not_counted
    assert "1 improved" in to_markdown(result).splitlines()[0]


def test_a_slower_case_failing_parity_still_fails_the_gate(tmp_path, pinned):
    result = _compared_pair(tmp_path, 1.3, {"parity": "fail"}, {"parity": "fail"})
    d = delta(result)
    assert d.verdict == "regressed" and d.counted and d in result.failures and result.exit_code == 1
    assert not any(f.startswith("not counted") for f in d.flags)


def test_losing_parity_while_getting_faster_is_still_a_regression(tmp_path, pinned):
    result = _compared_pair(tmp_path, 0.8, {"parity": "pass"}, {"parity": "fail"})
    d = delta(result)
    assert d.verdict == "regressed" and result.exit_code == 1
    assert any("parity pass → fail" in w for w in d.why)


def test_a_faster_case_with_a_partial_fp8_proof_is_not_counted(tmp_path, pinned):
    result = _compared_pair(tmp_path, 0.8, {"parity": "pass"}, {"parity": "pass", "fp8_proof": "partial"})
    d = delta(result)
    assert d.verdict == "improved" and d.counted is False
    assert any("not counted" in f and "FP8 proof partial" in f for f in d.flags), d.flags
    assert result.count("improved") == 0


def test_a_partial_fp8_proof_in_base_only_does_not_stop_the_gain(tmp_path, pinned):
    # The rule looks at the head: a head that now proves FP8 backs its speed.
    result = _compared_pair(tmp_path, 0.8, {"parity": "pass", "fp8_proof": "partial"},
                            {"parity": "pass", "fp8_proof": "fp8"})
    assert delta(result).verdict == "improved" and delta(result).counted and result.count("improved") == 1


def _verdict_dict(parity=None, proof=None, status="ok", parallel="single", nproc=1) -> dict:
    rec = {"status": status, "case": {"parallel": parallel, "nproc": nproc}}
    if parity is not None:
        rec["parity"] = {"verdict": parity}
    if proof is not None:
        rec["fp8_proof"] = {"verdict": proof}
    return rec


@pytest.mark.parametrize("rec, counts, reason", [
    (_verdict_dict("pass"), True, "parity pass"),
    (_verdict_dict("reference"), True, "parity reference"),
    (_verdict_dict("pass", "fp8"), True, "parity pass"),
    (_verdict_dict("pass", "unproven"), True, "parity pass"),
    (_verdict_dict(None), True, "no parity verdict (timing only)"),
    (_verdict_dict("n/a", parallel="ddp", nproc=2), True, "data-parallel (parity n/a by design)"),
    (_verdict_dict("fail"), False, "parity fail"),
    (_verdict_dict("inconclusive"), False, "parity inconclusive"),
    (_verdict_dict("n/a"), False, "parity n/a (nothing vouched for it)"),
    (_verdict_dict(None, parallel="ddp", nproc=2), False, "parity not judged"),
    (_verdict_dict("pass", "partial"), False, "FP8 proof partial"),
    (_verdict_dict("pass", "no-fp8"), False, "FP8 proof no-fp8"),
    (_verdict_dict("fail", "partial"), False, "parity fail, FP8 proof partial"),
    (_verdict_dict("pass", status="failed"), False, "status failed"),
])
def test_counts_for_speed_is_the_reports_rule_for_one_record(rec, counts, reason):
    assert counts_for_speed(rec) == (counts, reason)


def test_history_does_not_count_the_gain_of_a_case_with_a_partial_fp8_proof(tmp_path):
    paths = nightly(tmp_path, 7, slow_from=6, factor=0.7)
    records = [json.loads(line) for line in paths[-1].read_text().splitlines()]
    for r in records:
        if r.get("case_id") == AMP:
            r["fp8_proof"] = {"verdict": "partial"}
    paths[-1].write_text("".join(json.dumps(r) + "\n" for r in records))
    db = tmp_path / "h.db"
    for path in paths:
        history.add(db, judged_run.read(path))
    deltas, _ = latest_vs_recent(db, window=5)
    (d,) = [d for d in deltas if d.case_id == AMP]
    assert d.verdict == "improved" and d.counted is False
    assert any("not counted" in f and "FP8 proof partial" in f for f in d.flags), d.flags
    first = history_headline(deltas, [5])
    assert "improved" not in first and "1 gain(s) not counted" in first
    md = (report(db, tmp_path / "hist") / "history.md").read_text()
    assert "improved (not counted)" in md
