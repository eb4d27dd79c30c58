"""History databases read row by row: a bad row is skipped by its rowid, a run without device or time
is still charted, and storage trouble (read-only, full, no directory) or a newer tebench is named as
such, never called damage."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import FIXTURES
from tebench.analysis import judged_run
from tebench import cli
from tebench.store import history, history_db

CPU = FIXTURES / "cpu-smoke.jsonl"


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "h.db"
    history.add(path, judged_run.read(CPU))
    return path


def _sql(db, statement: str, *params) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(statement, params)


def test_a_text_median_is_skipped_by_rowid_and_the_rest_is_reported(db, tmp_path, capsys):
    _sql(db, "UPDATE cases SET median_ms = 'fast' WHERE rowid = 2")
    with pytest.warns(UserWarning, match=r"cases rowid 2: \[median_ms\] = 'fast': must be a number"):
        df = history.frame(db)
    assert 2 not in df.index or len(df) == 10
    assert df["median_ms"].dtype == float
    assert cli.main(["history", "report", "--db", str(db), "--out", str(tmp_path / "r")]) == 0
    assert "rowid 2" in capsys.readouterr().err


@pytest.mark.parametrize("column", ["median_ms", "tokens_per_s", "memory_bytes", "round"])
def test_a_negative_measurement_is_skipped_by_rowid(db, column):
    _sql(db, f"UPDATE cases SET {column} = -5 WHERE rowid = 3")
    with pytest.warns(UserWarning, match=rf"cases rowid 3: \[{column}\] = -5(\.0)?: must not be negative"):
        df = history.frame(db)
    assert len(df) == 10


def test_a_run_without_created_or_device_is_still_charted(db, tmp_path, capsys):
    _sql(db, "UPDATE runs SET created = NULL, device = NULL")
    _sql(db, "UPDATE cases SET device = NULL")
    df = history.frame(db)
    assert len(df) == 11 and set(df["device"]) == {history.UNKNOWN_DEVICE}
    assert cli.main(["history", "report", "--db", str(db), "--out", str(tmp_path / "r")]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_db_in_a_directory_that_does_not_exist_is_refused(tmp_path, capsys):
    target = tmp_path / "no" / "such" / "h.db"
    assert cli.main(["history", "add", str(CPU), "--db", str(target)]) == 2
    assert "no such directory" in capsys.readouterr().err
    with pytest.raises(history_db.HistoryError, match="no such directory"):
        history_db.connect(target, create=True)


def test_a_read_only_database_is_called_read_only_not_damaged(db, monkeypatch):
    # Root ignores permission bits, so the read-only mount is a read-only connection.
    monkeypatch.setattr(history, "connect", lambda path, create=False: sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None))
    other = [line for line in CPU.read_text().splitlines()]
    again = db.parent / "again.jsonl"
    again.write_text("\n".join(line.replace("20261130T114532-f1b5f869", "other-run") for line in other) + "\n")
    with pytest.raises(history.HistoryError) as caught:
        history.add(db, judged_run.read(again))
    assert "read-only" in str(caught.value) and "damaged" not in str(caught.value)


def _read_only_mount_works(tmp_path) -> bool:
    """Whether this machine lets a private mount namespace bind a folder read-only (root with CAP_SYS_ADMIN)."""
    import shutil
    import subprocess

    if not shutil.which("unshare"):
        return False
    (tmp_path / "probe").mkdir()
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {tmp_path}/probe {tmp_path}/probe && "
                            f"mount -o remount,bind,ro {tmp_path}/probe"], capture_output=True)
    return probe.returncode == 0


def test_a_database_on_a_read_only_mount_is_reported(db, tmp_path):
    """A WAL database is read where SQLite cannot make its -shm beside it (an archived database mounted read-only);
    even a read-only connection failed there, 'cannot open the file ... check that its directory is writable'."""
    import subprocess
    import sys

    if not _read_only_mount_works(tmp_path):
        pytest.skip("this machine does not let a private mount namespace bind a folder read-only")
    archive = tmp_path / "archive"
    archive.mkdir()
    stored = archive / "h.db"
    stored.write_bytes(db.read_bytes())  # closed by history add: no -wal beside it
    out = tmp_path / "rep"
    script = (f"mount --bind {archive} {archive} && mount -o remount,bind,ro {archive} && "
              f"{sys.executable} -m tebench history report --db {stored} --out {out} && "
              f"{sys.executable} -m tebench history add {CPU} --db {stored}")
    run = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)
    assert (out / "history.md").is_file(), run.stderr
    # Adding to it is refused, calling it read-only and intact, not damaged.
    assert run.returncode == 2 and "read-only" in run.stderr and "damaged" not in run.stderr, run.stderr


@pytest.mark.parametrize("message,fragment", [
    ("database or disk is full", "the disk is full"),
    ("attempt to write a readonly database", "read-only"),
    ("disk I/O error", "I/O error"),
    ("unable to open database file", "cannot open the file"),
    ("database disk image is malformed", "a damaged history database"),
])
def test_sqlite_errors_are_named_by_what_they_mean(message, fragment):
    text = history_db.describe_error(sqlite3.OperationalError(message), "cannot add x")
    assert fragment in text
    assert ("damaged" in text) == (fragment == "a damaged history database")


def test_a_database_of_a_newer_tebench_is_called_newer(db, capsys):
    _sql(db, f"PRAGMA user_version = {history_db.FORMAT_VERSION + 1}")
    _sql(db, "ALTER TABLE cases ADD COLUMN energy_j REAL")
    assert cli.main(["history", "report", "--db", str(db), "--out", str(db.parent / "r")]) == 2
    err = capsys.readouterr().err
    assert "newer tebench" in err and "damaged" not in err


def test_new_databases_carry_the_format_version(db):
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == history_db.FORMAT_VERSION


@pytest.mark.parametrize("stored", ["{cut short", '{"case_id": 5}', "9" * 5000, "[]"])
def test_a_damaged_stored_record_is_skipped_by_rowid(db, stored):
    run_id = history.frame(db)["run_id"].iloc[0]
    _sql(db, "UPDATE cases SET record_json = ? WHERE rowid = 3", stored)
    with pytest.warns(UserWarning, match=r"skipped 1 damaged stored record\(s\): cases rowid 3"):
        kept = history.records(db, [run_id])
    assert len(kept) == 10


_INTERRUPTED_WRITE = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=DELETE")  # a rollback journal: what a database made before WAL, or mid-creation, has
conn.execute("PRAGMA cache_size=2")  # so that changed pages reach the file before the commit
conn.execute("BEGIN IMMEDIATE")
conn.execute("CREATE TABLE junk(x)")
for _ in range(500):
    conn.execute("INSERT INTO junk VALUES (randomblob(1000))")
os._exit(0)  # killed mid-transaction: the file holds half a write, its journal the pages to restore
"""


def test_an_interrupted_write_is_rolled_back_not_called_read_only(db, tmp_path, capsys):
    """A `history add` killed mid-write leaves a hot journal, which a read-only probe cannot roll back: the
    database is ours, so it is rolled back (as the next `history add` would) and read as it was."""
    import subprocess
    import sys

    before = len(history.frame(db))
    subprocess.run([sys.executable, "-c", _INTERRUPTED_WRITE, str(db)], check=True)
    journal = db.parent / f"{db.name}-journal"
    assert journal.stat().st_size > 0
    assert cli.main(["history", "report", "--db", str(db), "--out", str(tmp_path / "r")]) == 0
    assert "read-only" not in capsys.readouterr().err
    assert len(history.frame(db)) == before and not (journal.exists() and journal.stat().st_size)
    with sqlite3.connect(db) as conn:
        assert "junk" not in {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}


@pytest.mark.parametrize("name", [":memory:", "file:foreign.db", "file:x.db?mode=memory", "FILE:foreign.db"])
def test_an_sqlite_uri_or_memory_name_is_refused_and_writes_nowhere(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    with sqlite3.connect("foreign.db") as conn:  # another program's database, which a URI would name
        conn.execute("create table mydata(x)")
    before = (tmp_path / "foreign.db").read_bytes()
    assert cli.main(["history", "add", str(CPU), "--db", name]) == 2
    err = capsys.readouterr().err
    assert f"--db {name}" in err and "not a file" in err, err
    assert (tmp_path / "foreign.db").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign.db"]


def test_a_file_whose_name_starts_with_file_is_written_given_as_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["history", "add", str(CPU), "--db", "./file:h.db"]) == 0
    assert history_db.check(tmp_path / "file:h.db") == "ours"


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_directory_in_the_place_of_the_databases_journal_is_named(db, capsys, suffix):
    # It said "cannot open the file ... check that its directory exists and is writable", which it was.
    (db.parent / f"{db.name}{suffix}").mkdir()
    assert cli.main(["history", "add", str(CPU), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"{db}{suffix} is not a regular file" in err, err
