"""The latest run of a history against the runs before it."""

from __future__ import annotations

from history_runs import nightly
from tebench.analysis import judged_run
from tebench.analysis.history_latest import latest_vs_recent
from tebench.store import history


def test_latest_run_against_the_window_includes_run_to_run_variance(tmp_path):
    db = tmp_path / "h.db"
    for path in nightly(tmp_path, 7, slow_from=6):
        history.add(db, judged_run.read(path))
    deltas, info = latest_vs_recent(db, window=5)
    by_case = {d.case_id: d for d in deltas}
    assert info["CPU (AMD EPYC)"]["latest"] == "night-06"
    assert info["CPU (AMD EPYC)"]["baseline_runs"] == [f"night-{i:02d}" for i in range(1, 6)]
    flagged = {d.case_id for d in deltas if d.verdict == "regressed"}
    assert flagged == {"gpt/tiny/PT-AMP"} and by_case["gpt/tiny/PT-AMP"].rounds == (5, 1)
    # Too few earlier runs: the run-to-run spread is unknown, no step-time verdict.
    db2 = tmp_path / "h2.db"
    for path in nightly(tmp_path, 3, slow_from=2):
        history.add(db2, judged_run.read(path))
    deltas, _ = latest_vs_recent(db2, window=5)
    assert {d.verdict for d in deltas if d.time_ratio is not None} == {"inconclusive"}


def test_the_rows_already_read_give_the_same_verdicts(tmp_path):
    db = tmp_path / "h.db"
    for path in nightly(tmp_path, 7, slow_from=6):
        history.add(db, judged_run.read(path))
    read_here = latest_vs_recent(db, window=4)
    given = latest_vs_recent(db, window=4, df=history.frame(db))
    assert [(d.case_id, d.verdict, d.time_ratio) for d in given[0]] == \
           [(d.case_id, d.verdict, d.time_ratio) for d in read_here[0]]
    assert given[1] == read_here[1]


def test_a_single_run_has_nothing_to_be_judged_against(tmp_path):
    db = tmp_path / "h.db"
    history.add(db, judged_run.read(nightly(tmp_path, 1)[0]))
    deltas, info = latest_vs_recent(db)
    assert deltas == [] and info == {"CPU (AMD EPYC)": {"latest": "night-00", "baseline_runs": []}}


def _retune(path, case_id: str, lr: float) -> None:
    """The run at ``path`` as if its matrix had given ``case_id`` another learning rate."""
    import json

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for r in lines:
        if r.get("case_id") == case_id:
            r["case"]["settings"]["lr"] = lr
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))


def test_earlier_runs_of_other_settings_are_left_out_of_the_baseline(tmp_path):
    # The matrix changed between nights: pooled, runs of two settings were one number of two benchmarks, and
    # each such case was judged invalid and counted in the headline as a regression.
    db = tmp_path / "h.db"
    paths = nightly(tmp_path, 7, slow_from=6)
    for path in paths[:3]:
        _retune(path, "gpt/tiny/PT-AMP", 0.5)
    for path in paths[:6]:
        _retune(path, "gpt/tiny/PT-FP32", 0.5)  # every earlier run: nothing to judge against
    for path in paths:
        history.add(db, judged_run.read(path))
    deltas, _ = latest_vs_recent(db, window=5)
    by_case = {d.case_id: d for d in deltas}
    assert "invalid" not in {d.verdict for d in deltas}, [(d.case_id, d.why) for d in deltas if d.verdict == "invalid"]
    amp = by_case["gpt/tiny/PT-AMP"]
    # Nights 3-5 ran its settings (0-2 another lr): its slowdown on night 6 is found against those three.
    assert amp.verdict == "regressed" and amp.rounds == (3, 1), (amp.verdict, amp.rounds, amp.why)
    fp32 = by_case["gpt/tiny/PT-FP32"]
    assert fp32.verdict == "not-comparable" and any("lr" in w for w in fp32.why), fp32.why
