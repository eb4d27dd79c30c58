"""The history database's migration path: ``PRAGMA user_version`` is its format; an older database is
upgraded when opened, keeping every row; a newer one is refused as newer, never as damaged, and left
byte for byte as it is."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from conftest import FIXTURES
from history_runs import CPU, nightly
from tebench import cli
from tebench.store import history, history_db

FORMAT_0_SQL = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created TEXT,
    added TEXT,
    device TEXT,
    matrix TEXT,
    git_commit TEXT,
    header_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cases (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    case_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    device TEXT,
    status TEXT,
    median_ms REAL,
    tokens_per_s REAL,
    memory_bytes REAL,
    final_loss REAL,
    parity TEXT,
    record_json TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, round)
);
CREATE INDEX IF NOT EXISTS cases_by_case ON cases(case_id, device);
"""
"""The tables as tebench made them before it set user_version (copied from tebench at fca3400^, whose
connect() ran this after ``PRAGMA journal_mode=WAL``); kept here as text so that a later change of
history_db.SCHEMA cannot change what "a format-0 database" means in these tests."""

FORMAT_1_DB = FIXTURES / "history-format1.db"
"""Made by ``tebench history add`` at 23fe2f2: two runs (fixture-0, fixture-1) of three cpu-smoke cases.
Tests read copies of it: SQLite opening a WAL database in place writes beside it."""
FORMAT_1_SHA256 = "013a00fea71d6ed6eb4bc6ff43f4228f3f98af86cd3e6f11dbd863db47fa9372"


def _pragmas(db: Path) -> tuple[int, int]:
    with closing(sqlite3.connect(db)) as conn:
        return (conn.execute("PRAGMA user_version").fetchone()[0],
                conn.execute("PRAGMA application_id").fetchone()[0])


def _db_rows(db: Path) -> list[tuple]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT * FROM cases ORDER BY run_id, case_id, round").fetchall() + \
            conn.execute("SELECT * FROM runs ORDER BY run_id").fetchall()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def format_0(path: Path, stamped: bool) -> Path:
    """A format-0 database holding the format-1 fixture's rows: unstamped as tebench made them before
    fca3400, or with tebench's application_id as it made them from fca3400 until 06d0898."""
    rows = path.with_name("rows.db")
    shutil.copyfile(FORMAT_1_DB, rows)  # a WAL database read in place leaves -shm and -wal beside it
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    if stamped:
        conn.execute(f"PRAGMA application_id={history_db.APPLICATION_ID}")
    conn.executescript(FORMAT_0_SQL)
    conn.execute("ATTACH DATABASE ? AS fixture", (str(rows),))
    conn.execute("INSERT INTO runs SELECT * FROM fixture.runs")
    conn.execute("INSERT INTO cases SELECT * FROM fixture.cases")
    conn.execute("DETACH DATABASE fixture")
    conn.close()
    assert _pragmas(path) == (0, history_db.APPLICATION_ID if stamped else 0)
    return path


@pytest.fixture
def format_1(tmp_path) -> Path:
    """A copy of the database tebench made before the migration path (the fixture stays as it is)."""
    path = tmp_path / "format1.db"
    shutil.copyfile(FORMAT_1_DB, path)
    return path


def test_the_fixture_is_left_as_it_was_made():
    assert _sha256(FORMAT_1_DB) == FORMAT_1_SHA256
    assert not FORMAT_1_DB.with_name(FORMAT_1_DB.name + "-wal").exists()


def test_every_older_format_has_its_step_and_format_0_is_what_tebench_made():
    assert [step.source for step in history_db.UPGRADES] == list(range(history_db.FORMAT_VERSION))
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.executescript(FORMAT_0_SQL)
        made = history_db._tables(conn)
    assert history_db.expected_tables(0) == made


@pytest.mark.parametrize("stamped", [False, True], ids=["unstamped", "stamped"])
def test_a_format_0_database_is_upgraded_by_add_and_keeps_its_rows(tmp_path, capsys, stamped):
    db = format_0(tmp_path / "old.db", stamped)
    before = _db_rows(db)
    assert history_db.check(db) == ("ours" if stamped else "unstamped")
    assert cli.main(["history", "add", str(CPU), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "added" in out and "11 new case record(s)" in out, out
    assert _pragmas(db) == (history_db.FORMAT_VERSION, history_db.APPLICATION_ID)
    after = _db_rows(db)
    assert set(before) <= set(after) and len(after) == len(before) + 11 + 1
    assert history_db.check(db) == "ours"


def test_a_format_0_database_is_upgraded_by_report_and_reads_as_before(tmp_path, format_1, capsys):
    db = format_0(tmp_path / "old.db", stamped=True)
    before = _db_rows(db)
    assert cli.main(["history", "report", "--db", str(db), "--out", str(tmp_path / "old")]) == 0
    assert _pragmas(db) == (history_db.FORMAT_VERSION, history_db.APPLICATION_ID)
    assert _db_rows(db) == before
    # The same rows in the format-1 database give the same page, but for the database's name.
    assert cli.main(["history", "report", "--db", str(format_1), "--out", str(tmp_path / "new")]) == 0
    old_md = (tmp_path / "old" / "history.md").read_text()
    assert old_md == (tmp_path / "new" / "history.md").read_text()
    assert "fixture-1" in old_md and "1 run before it" in old_md


def test_a_read_only_format_0_database_is_read_as_it_is(tmp_path):
    db = format_0(tmp_path / "old.db", stamped=False)
    with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)) as conn:
        assert history_db.upgrade(conn, db) == 0  # the same tables: nothing stops it being read
    assert _pragmas(db) == (0, 0)


def test_the_database_tebench_made_before_the_migration_path_opens_unchanged(format_1, tmp_path, capsys):
    assert _pragmas(format_1) == (1, history_db.APPLICATION_ID) and history_db.check(format_1) == "ours"
    digest = _sha256(format_1)
    assert cli.main(["history", "report", "--db", str(format_1), "--out", str(tmp_path / "h")]) == 0
    assert _sha256(format_1) == digest  # reading a current database writes nothing
    assert sorted(history.frame(format_1)["run_id"].unique()) == ["fixture-0", "fixture-1"]
    (path,) = nightly(tmp_path, 1)
    assert cli.main(["history", "add", str(path), "--db", str(format_1)]) == 0
    assert history.frame(format_1)["run_id"].nunique() == 3


@pytest.mark.parametrize("changed_tables", [False, True], ids=["same_tables", "new_column"])
def test_a_database_of_a_newer_tebench_is_refused_as_newer_and_left_as_it_is(format_1, tmp_path, capsys,
                                                                               changed_tables):
    with closing(sqlite3.connect(format_1)) as conn:
        conn.execute(f"PRAGMA user_version = {history_db.FORMAT_VERSION + 1}")
        if changed_tables:
            conn.execute("ALTER TABLE cases ADD COLUMN energy_j REAL")
        conn.commit()
    digest = _sha256(format_1)
    for argv in (["history", "add", str(CPU), "--db", str(format_1)],
                 ["history", "report", "--db", str(format_1), "--out", str(tmp_path / "h")]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "newer tebench" in err and f"format {history_db.FORMAT_VERSION + 1}" in err, err
        assert "use that tebench" in err, err
        assert "damaged" not in err and "delete" not in err.lower() and "remove" not in err.lower()
    assert _sha256(format_1) == digest
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize("app,version,fragment", [
    (history_db.APPLICATION_ID, -1, "format -1, a number no tebench writes"),
    (0, 3, "not a tebench history database (user_version 3 without tebench's application_id)"),
])
def test_a_format_no_tebench_writes_is_refused_and_left_as_it_is(tmp_path, capsys, app, version, fragment):
    db = tmp_path / "odd.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.executescript(FORMAT_0_SQL)
        conn.execute(f"PRAGMA application_id = {app}")
        conn.execute(f"PRAGMA user_version = {version}")
    digest = _sha256(db)
    assert cli.main(["history", "add", str(CPU), "--db", str(db)]) == 2
    assert fragment in capsys.readouterr().err
    assert _sha256(db) == digest
