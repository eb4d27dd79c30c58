"""The history page: the step marked, the latest run flagged, its first line, written whole."""

from __future__ import annotations

import sqlite3
import warnings

from history_runs import nightly
from tebench.analysis import judged_run
from tebench.cli.history import report
from tebench.store import history


def test_report_marks_the_step_and_flags_the_latest_run(tmp_path):
    db = tmp_path / "h.db"
    for path in nightly(tmp_path, 9, slow_from=8):
        history.add(db, judged_run.read(path))
    out = report(db, tmp_path / "hist")
    html = (out / "history.html").read_text()
    md = (out / "history.md").read_text()
    assert "1 regression(s)" in md and "gpt/tiny/PT-AMP" in md
    assert "possible change" in md and "awaiting 2 more run(s)" in md and "night-08" in html
    assert (out / "trends.png").is_file() and "data:image/png;base64," in html
    # Written whole: nothing but the three files, no temporary file left beside them.
    assert sorted(p.name for p in out.iterdir()) == ["history.html", "history.md", "trends.png"]
    # Three runs later the change is confirmed at the run where it happened.
    db2 = tmp_path / "h2.db"
    for path in nightly(tmp_path, 9, slow_from=6):
        history.add(db2, judged_run.read(path))
    md2 = (report(db2, tmp_path / "hist2") / "history.md").read_text()
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
        history.add(db, judged_run.read(path))
    first = (report(db, tmp_path / "hist") / "history.md").read_text().splitlines()[0]
    # One earlier run: not "the 5 before it", and not a green "nothing": it cannot tell.
    assert "1 run before it" in first and first.startswith("### ⚪"), first
    assert "inconclusive" in first and "Can't tell" in first and "at least 3" in first
    db1 = tmp_path / "h1.db"
    (tmp_path / "one").mkdir()
    history.add(db1, judged_run.read(nightly(tmp_path / "one", 1)[0]))
    alone = (report(db1, tmp_path / "hist1") / "history.md").read_text().splitlines()[0]
    assert "the latest run has no earlier run to compare with:" in alone and not alone.startswith("### 🟢"), alone


def test_an_unusable_row_is_warned_about_once(tmp_path):
    db = tmp_path / "h.db"
    for path in nightly(tmp_path, 2):
        history.add(db, judged_run.read(path))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE cases SET median_ms = 'fast' WHERE rowid = 2")
    conn.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report(db, tmp_path / "hist")
    assert [str(w.message).count("cases rowid 2") for w in caught] == [1]


def test_the_pages_escape_what_the_database_holds(tmp_path):
    db = tmp_path / "h.db"
    history.add(db, judged_run.read(nightly(tmp_path, 1)[0]))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET git_commit = '<script>alert(1)</script>'")
    conn.close()
    out = report(db, tmp_path / "hist")
    assert "<script>alert" not in (out / "history.html").read_text()
    assert "<script>alert" not in (out / "history.md").read_text()
