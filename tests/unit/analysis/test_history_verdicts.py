"""The loss-parity verdicts that moved across a history's runs (tebench.analysis.history_verdicts)."""

from __future__ import annotations

import pandas as pd

from conftest import ROOT
from tebench import cli
from tebench.analysis import history_verdicts


def _frame(rows: list[tuple]) -> pd.DataFrame:
    """History rows, oldest run first: (run, commit, case, round, status, verdict), on one device."""
    return pd.DataFrame([{"run_id": run, "created": "", "git_commit": commit, "case_id": case, "round": rnd,
                          "device": "H100", "status": status, "median_ms": 1.0, "tokens_per_s": 1.0,
                          "memory_bytes": 1.0, "final_loss": 1.0, "parity": verdict}
                         for run, commit, case, rnd, status, verdict in rows])


def test_a_case_whose_verdict_moved_is_listed_with_each_runs_verdict_and_the_commit():
    df = _frame([("r1", "abcdef0123", "a", 0, "ok", "pass"), ("r1", "abcdef0123", "b", 0, "ok", "pass"),
                 ("r2", "abcdef0123", "a", 0, "ok", "fail"), ("r2", "abcdef0123", "b", 0, "ok", "pass"),
                 ("r3", "abcdef0123", "a", 0, "ok", "pass"), ("r3", "abcdef0123", "b", 0, "ok", "pass")])
    moved = history_verdicts.moved(df, window=5)
    assert moved.to_dict("records") == [{"device": "H100", "case": "a", "verdicts, oldest first": "pass · fail · pass",
                                         "latest": "pass", "runs": "2 of 3 as the latest", "code": "abcdef0"}]


def test_a_runs_verdict_is_its_worst_ok_round_and_runs_before_the_window_are_left_out():
    df = _frame([("r0", None, "a", 0, "ok", "fail"),  # before the window of 2 + 1 runs
                 ("r1", "c1", "a", 0, "ok", "pass"), ("r1", "c1", "a", 1, "ok", "inconclusive"),
                 ("r1", "c1", "a", 2, "ok", "pass"),
                 ("r2", "c2", "a", 0, "ok", "pass"), ("r2", "c2", "a", 1, "timeout", None),
                 ("r3", "c2", "a", 0, "ok", "pass")])
    moved = history_verdicts.moved(df, window=2)
    assert moved[["verdicts, oldest first", "runs", "code"]].values.tolist() == [
        ["inconclusive · pass · pass", "2 of 3 as the latest", "2 commits"]]
    assert history_verdicts.moved(df[~df["run_id"].isin(["r0", "r1"])], window=2).empty  # pass, pass: none moved


def test_the_stored_h100_nights_list_the_ao_fp8_case_that_moved(tmp_path):
    db = tmp_path / "h.db"
    for night in ("night1", "night2"):
        path = ROOT / "reports" / "h100-nightly-87e902b" / f"{night}.jsonl.gz"
        assert cli.main(["history", "add", "--db", str(db), str(path)]) == 0
    assert cli.main(["history", "report", "--db", str(db), "--out", str(tmp_path / "page")]) == 0
    page = (tmp_path / "page" / "history.md").read_text()
    assert "**Loss-parity verdicts that moved** over each device's last 6 runs at most (1 case(s))" in page
    assert ("| NVIDIA H100 80GB HBM3 | llama/d4096-l4/AO-FP8/tensorwise | pass · fail | fail | 1 of 2 as the latest "
            "| 87e902b |") in page
    assert "Loss-parity verdicts that moved (1)" in (tmp_path / "page" / "history.html").read_text()
