"""Nightly history's storage: idempotent, concurrent-safe adds."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import warnings
from contextlib import closing

import pytest

from history_runs import CPU, nightly
from tebench.analysis import judged_run
from tebench.store import history


def test_add_is_idempotent(tmp_path):
    db = tmp_path / "h.db"
    (path,) = nightly(tmp_path, 1)
    first = history.add(db, judged_run.read(path))
    again = history.add(db, judged_run.read(path))
    assert first.new_run and first.new_cases == 11
    assert not again.new_run and again.new_cases == 0 and again.total_cases == 11
    assert again.differing == []
    assert len(history.frame(db)) == 11


def test_a_run_added_again_with_other_values_is_named_and_the_stored_kept(tmp_path):
    """The same run id with a step time or a verdict edited: "already stored" said nothing of it."""
    db = tmp_path / "h.db"
    (path,) = nightly(tmp_path, 1)
    history.add(db, judged_run.read(path))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    case = next(r for r in records if r.get("type") == "case" and r["status"] == "ok")
    original = sorted(case["timing"]["samples_ms"])
    case["timing"]["samples_ms"] = [10 * s for s in case["timing"]["samples_ms"]]
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in records))
    again = history.add(db, judged_run.read(edited))
    assert again.new_cases == 0 and len(again.differing) == 1, again
    assert again.differing[0].startswith(f"{case['case_id']} round {case.get('round', 0)}: median_ms ")
    stored = history.frame(db)
    row = stored[stored["case_id"] == case["case_id"]]
    assert len(stored) == 11 and original[0] <= float(row["median_ms"].iloc[0]) <= original[-1]  # the first run's


def test_the_run_row_keeps_the_headers_device_and_commit(tmp_path):
    db = tmp_path / "h.db"
    records = [json.loads(line) for line in CPU.read_text().splitlines()]
    records[0]["env"]["git_commit"] = "abc1234"
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    history.add(db, judged_run.read(path))
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT device, git_commit FROM runs").fetchall() == [("CPU (AMD EPYC)", "abc1234")]


def _add(args):
    db, path = args
    return history.add(db, judged_run.read(path)).new_cases


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


def _run_at(tmp_path, run_id: str, created: str):
    """The CPU fixture as run ``run_id``, made at local time ``created`` (with its offset)."""
    lines = []
    for line in CPU.read_text().splitlines():
        record = json.loads(line)
        record["run_id"] = run_id
        if record.get("type") == "header":
            record["created"] = created
        lines.append(json.dumps(record))
    path = tmp_path / f"{run_id}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return judged_run.read(path)


def test_a_header_time_that_is_no_iso_time_is_warned_of_where_the_file_is_read(tmp_path):
    with pytest.warns(UserWarning, match=r"run odd's header has created = 'yesterday', not an ISO 8601 time .*"
                                          r"history orders such a run as untimed"):
        _run_at(tmp_path, "odd", "yesterday")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run_at(tmp_path, "naive", "2026-12-08T00:24:04")  # read, and ordered, as UTC
        _run_at(tmp_path, "untimed", "")


def test_runs_are_ordered_by_their_instant_across_time_zones(tmp_path):
    from tebench.analysis import history_latest

    db = tmp_path / "h.db"
    # As text the later run sorts first: 2026-12-07T06:07-1200 is 18:07 UTC, 2026-12-08T08:06+1400 is 18:06 UTC.
    history.add(db, _run_at(tmp_path, "east", "2026-12-08T08:06:00+1400"))
    history.add(db, _run_at(tmp_path, "west", "2026-12-07T06:07:07-1200"))
    history.add(db, _run_at(tmp_path, "untimed", ""))
    assert list(dict.fromkeys(history.frame(db)["run_id"])) == ["untimed", "east", "west"]
    _, info = history_latest.latest_vs_recent(db)
    assert [v["latest"] for v in info.values()] == ["west"]
