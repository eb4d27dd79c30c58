"""Nightly history: idempotent, concurrent-safe adds; step changes; the trend report."""

from __future__ import annotations

import copy
import json
import multiprocessing
from pathlib import Path

import numpy as np

from conftest import FIXTURES
from tebench.store import history

CPU = FIXTURES / "cpu-smoke.jsonl"


def nightly(tmp_path: Path, n: int, slow_from: int | None = None, factor: float = 1.3) -> list[Path]:
    """n synthetic nightly runs from the fixture; from run ``slow_from`` on, gpt/tiny/PT-AMP is slower."""
    base = [json.loads(line) for line in CPU.read_text().splitlines()]
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        records = copy.deepcopy(base)
        run_id = f"night-{i:02d}"
        for r in records:
            r["run_id"] = run_id
            if r["type"] == "header":
                r["created"] = f"2026-11-{i + 1:02d}T02:00:00+0000"
            if r.get("timing"):
                f = factor if (slow_from is not None and i >= slow_from and r["case_id"] == "gpt/tiny/PT-AMP") else 1.0
                jitter = 1 + rng.normal(0, 0.01)
                r["timing"]["samples_ms"] = [s * f * jitter for s in r["timing"]["samples_ms"]]
                r["timing"]["stats"]["median"] = float(np.median(r["timing"]["samples_ms"]))
        path = tmp_path / f"{run_id}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        paths.append(path)
    return paths


def test_add_is_idempotent(tmp_path):
    db = tmp_path / "h.db"
    (path,) = nightly(tmp_path, 1)
    first = history.add(db, path)
    again = history.add(db, path)
    assert first.new_run and first.new_cases == 11
    assert not again.new_run and again.new_cases == 0 and again.total_cases == 11
    assert len(history.frame(db)) == 11


def _add(args):
    db, path = args
    return history.add(db, path).new_cases


def test_concurrent_adds_lose_nothing(tmp_path):
    db = tmp_path / "h.db"
    paths = nightly(tmp_path, 8)
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        # A bounded wait: a worker that dies (e.g. cannot import this module) loses its
        # task, and a plain map would then wait forever.
        counts = pool.map_async(_add, [(db, p) for p in paths + paths]).get(timeout=300)  # every run twice, at once
    assert sum(counts) == 8 * 11
    df = history.frame(db)
    assert df["run_id"].nunique() == 8 and len(df) == 88


def test_step_change_detection():
    rng = np.random.default_rng(3)
    flat = list(10 + rng.normal(0, 0.1, 12))
    assert history.step_changes(flat) == []
    stepped = list(10 + rng.normal(0, 0.1, 6)) + list(12 + rng.normal(0, 0.1, 6))
    (change,) = history.step_changes(stepped)
    assert change.index == 6 and 1.15 < change.ratio < 1.25 and change.kind == "step" and not change.awaiting
    noisy = list(10 + rng.normal(0, 2.0, 12))
    assert history.step_changes(noisy) == []


def test_recent_change_awaits_confirmation_and_is_placed_right():
    rng = np.random.default_rng(4)
    level = list(10 + rng.normal(0, 0.05, 9))
    for after in (1, 2):
        (change,) = history.step_changes(level + list(12 + rng.normal(0, 0.05, after)), min_side=3)
        # Not reported as a change yet, and placed at the first slow run, not before it.
        assert change.awaiting == 3 - after and change.index == 9
        assert change.label == f"possible change, awaiting {3 - after} more run(s)"
    (change,) = history.step_changes(level + list(12 + rng.normal(0, 0.05, 3)), min_side=3)
    assert change.index == 9 and not change.awaiting and change.kind == "step"
    # One noisy run at the end that stays within the noise is nothing at all.
    assert history.step_changes(level + [10.02]) == []


def test_drift_is_told_apart_from_a_step():
    rng = np.random.default_rng(6)
    ramp = list(10 * (1 + 0.02 * np.arange(14)) + rng.normal(0, 0.03, 14))
    changes = history.step_changes(ramp)
    assert changes and all(c.kind == "drift" for c in changes if not c.awaiting)
    assert changes[0].index == 0 and changes[0].ratio > 1.15
    stepped = list(10 + rng.normal(0, 0.05, 7)) + list(12 + rng.normal(0, 0.05, 7))
    assert [c.kind for c in history.step_changes(stepped)] == ["step"]


def test_latest_run_against_the_window_includes_run_to_run_variance(tmp_path):
    db = tmp_path / "h.db"
    for path in nightly(tmp_path, 7, slow_from=6):
        history.add(db, path)
    deltas, info = history.latest_vs_recent(db, window=5)
    by_case = {d.case_id: d for d in deltas}
    assert info["CPU (AMD EPYC)"]["latest"] == "night-06"
    flagged = {d.case_id for d in deltas if d.verdict == "regressed"}
    assert flagged == {"gpt/tiny/PT-AMP"} and by_case["gpt/tiny/PT-AMP"].rounds == (5, 1)
    # Too few earlier runs: the run-to-run spread is unknown, no step-time verdict.
    db2 = tmp_path / "h2.db"
    for path in nightly(tmp_path, 3, slow_from=2):
        history.add(db2, path)
    deltas, _ = history.latest_vs_recent(db2, window=5)
    assert {d.verdict for d in deltas if d.time_ratio is not None} == {"inconclusive"}


def test_report_marks_the_step_and_flags_the_latest_run(tmp_path):
    db = tmp_path / "h.db"
    for path in nightly(tmp_path, 9, slow_from=8):
        history.add(db, path)
    out = history.report(db, tmp_path / "hist")
    html = (out / "history.html").read_text()
    md = (out / "history.md").read_text()
    assert "1 regression(s)" in md and "gpt/tiny/PT-AMP" in md
    assert "possible change, awaiting 2 more run(s)" in md and "night-08" in html
    assert (out / "trends.png").is_file() and "data:image/png;base64," in html
    # Three runs later the change is confirmed at the run where it happened.
    db2 = tmp_path / "h2.db"
    for path in nightly(tmp_path, 9, slow_from=6):
        history.add(db2, path)
    md2 = (history.report(db2, tmp_path / "hist2") / "history.md").read_text()
    assert "night-06" in md2 and "awaiting 1 more" not in md2 and "awaiting 2 more" not in md2


def test_cli_history(tmp_path, tebench_cli):
    db = tmp_path / "h.db"
    paths = nightly(tmp_path, 2)
    proc = tebench_cli("history", "add", *map(str, paths), "--db", str(db), check=True)
    assert proc.stdout.count("added") == 2
    proc = tebench_cli("history", "add", str(paths[0]), "--db", str(db), check=True)
    assert "already stored" in proc.stdout
    tebench_cli("history", "report", "--db", str(db), "--out", str(tmp_path / "rep"), check=True)
    missing = tebench_cli("history", "report", "--db", str(tmp_path / "none.db"), "--out", str(tmp_path / "x"))
    assert missing.returncode == 2 and "no such history database" in missing.stderr


def test_history_headline_counts_the_runs_there_are_and_says_inconclusive(tmp_path):
    db = tmp_path / "h.db"
    for path in nightly(tmp_path, 2):
        history.add(db, path)
    first = (history.report(db, tmp_path / "hist") / "history.md").read_text().splitlines()[0]
    # One earlier run: not "the 5 before it", and not a green "nothing": it cannot tell.
    assert "against the 1 run before it" in first and first.startswith("### ⚪")
    assert "inconclusive" in first and "Can't tell" in first and "at least 3" in first
    db1 = tmp_path / "h1.db"
    (tmp_path / "one").mkdir()
    history.add(db1, nightly(tmp_path / "one", 1)[0])
    alone = (history.report(db1, tmp_path / "hist1") / "history.md").read_text().splitlines()[0]
    assert "no earlier run to compare with" in alone and not alone.startswith("### 🟢")
