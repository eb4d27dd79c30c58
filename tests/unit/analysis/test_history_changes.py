"""Step changes and drift in a history's series, and the series a history's rows make."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tebench.analysis.history_changes import change_rows, step_changes, trends


def test_step_change_detection():
    rng = np.random.default_rng(3)
    flat = list(10 + rng.normal(0, 0.1, 12))
    assert step_changes(flat) == []
    stepped = list(10 + rng.normal(0, 0.1, 6)) + list(12 + rng.normal(0, 0.1, 6))
    (change,) = step_changes(stepped)
    assert change.index == 6 and 1.15 < change.ratio < 1.25 and change.kind == "step" and not change.awaiting
    noisy = list(10 + rng.normal(0, 2.0, 12))
    assert step_changes(noisy) == []


def test_recent_change_awaits_confirmation_and_is_placed_right():
    rng = np.random.default_rng(4)
    level = list(10 + rng.normal(0, 0.05, 9))
    for after in (1, 2):
        (change,) = step_changes(level + list(12 + rng.normal(0, 0.05, after)), min_side=3)
        # Not reported as a change yet, and placed at the first slow run, not before it.
        assert change.awaiting == 3 - after and change.index == 9
        assert "possible change" in change.label and f"awaiting {3 - after} more run(s)" in change.label
    (change,) = step_changes(level + list(12 + rng.normal(0, 0.05, 3)), min_side=3)
    assert change.index == 9 and not change.awaiting and change.kind == "step"
    # One noisy run at the end that stays within the noise is nothing at all.
    assert step_changes(level + [10.02]) == []


def test_drift_is_told_apart_from_a_step():
    rng = np.random.default_rng(6)
    ramp = list(10 * (1 + 0.02 * np.arange(14)) + rng.normal(0, 0.03, 14))
    changes = step_changes(ramp)
    assert changes and all(c.kind == "drift" for c in changes if not c.awaiting)
    assert changes[0].index == 0 and changes[0].ratio > 1.15
    stepped = list(10 + rng.normal(0, 0.05, 7)) + list(12 + rng.normal(0, 0.05, 7))
    assert [c.kind for c in step_changes(stepped)] == ["step"]


def _history_rows(values: dict[str, list[float | None]], status: str = "ok") -> pd.DataFrame:
    """History rows (as store.history.frame reads them) of one device: case id -> median per run."""
    rows = []
    for case_id, medians in values.items():
        for i, median in enumerate(medians):
            rows.append({"run_id": f"r{i:02d}", "created": f"2026-11-{i + 1:02d}", "git_commit": None,
                         "case_id": case_id, "round": 0, "device": "H200", "status": status,
                         "median_ms": median, "tokens_per_s": None, "memory_bytes": None, "final_loss": None,
                         "parity": None})
    return pd.DataFrame(rows).sort_values(["created", "case_id"], kind="stable").reset_index(drop=True)


def test_trends_are_panel_by_panel_and_a_run_missing_keeps_its_place():
    flat = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 10.1]
    stepped = [10.0, 10.1, 9.9, 10.0, 12.0, 12.1, 11.9, 12.05]
    df = _history_rows({"gpt/s/PT-AMP": flat, "llama/s/PT-AMP": flat, "gpt/s/TE-FP8": [None, *stepped[1:]]})
    series = trends(df, threshold=0.05, confirm=3)
    # gpt/s's two cases share a panel and come before llama/s, whatever order the rows interleave them in.
    assert [(s.group, s.case_id) for s in series] == [
        ("gpt/s", "gpt/s/PT-AMP"), ("gpt/s", "gpt/s/TE-FP8"), ("llama/s", "llama/s/PT-AMP")]
    fp8 = series[1]
    assert fp8.positions == [1, 2, 3, 4, 5, 6, 7] and fp8.run_ids[0] == "r01" and fp8.mode == "TE-FP8"
    (change,) = fp8.changes
    assert change.kind == "step" and not change.awaiting and fp8.run_ids[change.index] == "r04"
    (row,) = change_rows(series)
    assert row["case_id"] == "gpt/s/TE-FP8" and row["run_id"] == "r04" and row["created"] == "2026-11-05"
    assert abs(row["change"] - (change.after / change.before - 1)) < 1e-12


def test_trends_leave_out_cases_that_did_not_pass():
    assert trends(_history_rows({"gpt/s/PT-AMP": [10.0] * 6}, status="failed")) == []
