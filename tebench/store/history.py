"""Nightly history's storage: runs and their case records kept in SQLite, read back checked.

``add`` stores a run's header and every case record (samples included) in an
SQLite database. It is idempotent (a run already stored is not duplicated; a
resumed run adds only its new cases) and safe when several jobs add at once
(one write transaction at a time, with a generous busy timeout; WAL journal).
``frame`` and ``records`` read it back, each row checked as a results line is.
Which database a file is, its format and its upgrades are :mod:`tebench.store.history_db`'s;
step changes and the latest run's verdicts are :mod:`tebench.analysis.history_changes` and
:mod:`tebench.analysis.history_latest`; the page is :mod:`tebench.report.history_page`.
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
import time
import warnings
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from tebench.schema.records import CaseResult, Throughput
from tebench.schema.version import RecordError
from tebench import bounded
from tebench.store import history_db
from tebench.store import reader as results
from tebench.store.history_db import HistoryError

__all__ = ["Added", "HistoryError", "UNKNOWN_DEVICE", "add", "connect", "frame", "records"]


def connect(db: str | Path, create: bool = False) -> sqlite3.Connection:
    """Open tebench's history database ``db`` (made when ``create`` and missing); HistoryError for any
    other file, before anything is written to it (see :mod:`tebench.store.history_db`)."""
    return history_db.connect(db, create)


@contextlib.contextmanager
def _reading(db: str | Path) -> Iterator[sqlite3.Connection]:
    """A connection for queries: a database damaged past its header is refused naming the file."""
    try:
        with closing(connect(db)) as conn:
            yield conn
    except sqlite3.DatabaseError as exc:
        raise HistoryError(f"{db}: {history_db.describe_error(exc, 'cannot read it')}") from None


@dataclass
class Added:
    """What ``add`` did."""

    run_id: str
    new_run: bool
    new_cases: int
    total_cases: int
    differing: list[str] = field(default_factory=list)
    """The records already stored under this run id whose values differ from the file's, in words ("gpt/tiny/PT-AMP
    round 0: parity 'pass' stored, 'fail' here"): the stored ones are kept."""


_TEXT, _INTEGER, _REAL = "text", "integer", "real"
_RUN_COLUMNS = (("run_id", _TEXT), ("created", _TEXT), ("added", _TEXT), ("device", _TEXT), ("matrix", _TEXT),
                ("git_commit", _TEXT), ("header_json", _TEXT))
_CASE_COLUMNS = (("run_id", _TEXT), ("case_id", _TEXT), ("round", _INTEGER), ("device", _TEXT),
                 ("status", _TEXT), ("median_ms", _REAL), ("tokens_per_s", _REAL), ("memory_bytes", _REAL),
                 ("final_loss", _REAL), ("parity", _TEXT), ("record_json", _TEXT))
_FIELDS = {"created": "created", "matrix": "matrix.name", "git_commit": "env.git_commit", "device": "device",
           "run_id": "run_id", "case_id": "case_id", "round": "round", "status": "status",
           "median_ms": "timing.samples_ms (median)", "tokens_per_s": "throughput", "memory_bytes": "memory",
           "final_loss": "loss.final", "parity": "parity.verdict"}
"""Where in a record each column's value comes from, for messages."""


def _sql_problem(value: Any, kind: str) -> str | None:
    """Why ``value`` cannot be stored in a column of ``kind`` (None: it can)."""
    if value is None:
        return None
    if kind == _TEXT:
        return None if isinstance(value, str) else "must be a string"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "must be a number"
    if kind == _INTEGER and not isinstance(value, int):
        return "must be an integer"
    if isinstance(value, int) and not -2**63 <= value < 2**63:
        return "is beyond SQLite's 64-bit integers"
    return None


def _line_of(file: str, wanted: Any) -> int | None:
    """The line of ``file`` whose record ``wanted(record)`` picks (the last such line), if one does."""
    found = None
    try:
        for lineno, raw in bounded.iter_lines(file):
            if raw is None:
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict) and wanted(rec):
                found = lineno
                if rec.get("type") == "header":
                    break  # the run's header is its first
    except (OSError, bounded.InputError):
        return None
    return found


def _checked(row: tuple[Any, ...], columns: tuple[tuple[str, str], ...], file: str, wanted: Any,
             what: str) -> tuple[Any, ...]:
    """``row`` if SQLite can store every value as declared; else HistoryError naming the results file
    (``file:line`` where the record's line can be found), the field and the value."""
    for value, (column, kind) in zip(row, columns):
        why = _sql_problem(value, kind)
        if why:
            line = _line_of(file, wanted)
            shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
            raise HistoryError(f"{file}{f':{line}' if line else ''}: {what} [{_FIELDS.get(column, column)}] = "
                               f"{shown}: {why}; nothing of this file was stored")
    return row


def _rows(run: results.Run) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """The run's row and its cases' rows, every value checked before the database is opened."""
    header = run.header
    header_row = (run.run_id, header.created or "", time.strftime("%Y-%m-%dT%H:%M:%S%z"), header.device,
                  header.matrix_name, header.environment.git_commit, json.dumps(header.to_dict()))
    _checked(header_row, _RUN_COLUMNS, run.path, lambda r: r.get("type") == "header", "header")
    case_rows = []
    for rec in run.cases:
        # This round's rates at its own median step time (an ok round's: the others have none). The median
        # is computed from the samples on each access: once here.
        median_ms = rec.median_ms
        rates = Throughput.at(rec.throughput, median_ms if rec.timed else None, run.header.peak_tflops, rec.nproc)
        # A line its reader vouched for is the JSON writing the record anew gives: stored as read.
        line = rec.stored_line()
        text = line.rstrip().decode("utf-8") if isinstance(line, bytes) else json.dumps(rec.to_dict())
        row = (run.run_id, rec.case_id, rec.round_no, rec.device.name if rec.device else None,
               rec.status, median_ms, rates.tokens_per_s, rec.peak_memory, rec.final_loss, rec.verdict, text)
        def wanted(r: dict, cid: str = rec.case_id, rnd: int = rec.round_no) -> bool:
            return r.get("type") == "case" and r.get("case_id") == cid and r.get("round", 0) == rnd
        case_rows.append(_checked(row, _CASE_COLUMNS, run.path, wanted, f"case {rec.case_id}"))
    return header_row, case_rows


def _check_one_run(run: results.Run) -> None:
    """HistoryError unless the file holds one run with a run id: the history is keyed by it.

    A header without one was stored under a null id and reported as "already stored" the next
    time; a file holding two runs (concatenated, or parts appended) would be stored under the
    first's id with the second's records standing in for the first's.
    """
    ids = list(dict.fromkeys(h.run_id for h in run.headers))
    if not all(isinstance(i, str) and i for i in ids):
        raise HistoryError(f"{run.path}: a header without a run id ([run_id] = {run.run_id!r}); "
                           "the history is keyed by it: nothing of this file was stored")
    if len(ids) > 1:
        raise HistoryError(f"{run.path}: holds {len(ids)} runs ({', '.join(str(i) for i in ids[:5])}); the history stores one "
                           "run per file: split it into one file per run and add each (nothing was stored)")


def add(db: str | Path, run: results.Run) -> Added:
    """Store a run read from a results file (:func:`tebench.analysis.judged_run.read`: parity judged
    over it as the report and ``--strict`` judge it); adding the same run again changes nothing.

    Every value is checked before the database is opened: a run that cannot be
    stored is refused (HistoryError naming the file, the field and the value)
    and the database is left as it was.
    """
    _check_one_run(run)
    header_row, case_rows = _rows(run)
    with closing(connect(db, create=True)) as conn:
        try:
            conn.execute("BEGIN IMMEDIATE")  # one writer at a time; others wait (busy_timeout)
            try:
                cur = conn.execute("INSERT OR IGNORE INTO runs VALUES (?,?,?,?,?,?,?)", header_row)
                new_run = cur.rowcount == 1
                new_cases = 0
                differing = []
                for row in case_rows:
                    inserted = conn.execute("INSERT OR IGNORE INTO cases VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                                            row).rowcount
                    new_cases += inserted
                    if not inserted:
                        differing += _differs(conn, row)
                conn.execute("COMMIT")
            except BaseException:
                # A failed COMMIT (a full disk) may have ended the transaction already: the error that
                # says why is the one raised, not "cannot rollback - no transaction is active".
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            total = conn.execute("SELECT COUNT(*) FROM cases WHERE run_id=?", (run.run_id,)).fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"{db}: {history_db.describe_error(exc, f'cannot add {run.path}')}") from None
    return Added(run.run_id, new_run, new_cases, total, differing)


_COMPARED = ("status", "median_ms", "tokens_per_s", "memory_bytes", "final_loss", "parity")
"""The values of a case row that a record added again under its run id must repeat."""


def _differs(conn: sqlite3.Connection, row: tuple[Any, ...]) -> list[str]:
    """[] where the stored row of (run, case, round) holds the values of ``row``, else what differs, in words: a run
    id names one run, so a file that says otherwise was edited, or judged by other rules."""
    names = [c for c, _ in _CASE_COLUMNS]
    stored = conn.execute(f"SELECT {', '.join(_COMPARED)} FROM cases WHERE run_id=? AND case_id=? AND round=?",
                          row[:3]).fetchone()
    if stored is None:
        return []
    mine = [row[names.index(c)] for c in _COMPARED]
    diff = [f"{c} {old!r} stored, {new!r} here" for c, old, new in zip(_COMPARED, stored, mine) if old != new]
    return [f"{row[1]} round {row[2]}: {diff[0]}"] if diff else []


_FRAME_COLUMNS = (("run_id", _TEXT), ("created", _TEXT), ("git_commit", _TEXT), ("case_id", _TEXT),
                  ("round", _INTEGER), ("device", _TEXT), ("status", _TEXT), ("median_ms", _REAL),
                  ("tokens_per_s", _REAL), ("memory_bytes", _REAL), ("final_loss", _REAL), ("parity", _TEXT))
_REQUIRED = ("run_id", "case_id", "round")
_MEASURED = ("round", "median_ms", "tokens_per_s", "memory_bytes")
UNKNOWN_DEVICE = "(device not recorded)"


def _row_problem(row: tuple[Any, ...]) -> str | None:
    """Why one stored row cannot be charted (None: it can): SQLite keeps any value in any column."""
    for value, (column, kind) in zip(row, _FRAME_COLUMNS):
        if value is None and column in _REQUIRED:
            return f"[{column}] is null"
        why = _sql_problem(value, kind)
        if why is None and isinstance(value, float) and kind == _REAL and not math.isfinite(value):
            why = "must be finite"
        if why is None and column in _MEASURED and isinstance(value, (int, float)) and value < 0:
            why = "must not be negative"  # a time, a rate or a size: as the results line it was taken from
        if why is None and column == "case_id" and value.count("/") < 2:
            why = "not a case id (workload/size/mode...)"
        if why:
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            return f"[{column}] = {shown}: {why}"
    return None


def frame(db: str | Path) -> pd.DataFrame:
    """Every stored case row with its run's time and device, oldest run first.

    Each row is checked as results lines are: a row another program or a damaged write left with a
    value of the wrong type (a text median) is skipped with a warning naming its rowid, and a run
    without a device or time is shown under "(device not recorded)" and at the start, not dropped.
    """
    with _reading(db) as conn:
        rows = conn.execute(
            "SELECT c.rowid, c.run_id, r.created, r.git_commit, c.case_id, c.round, "
            "COALESCE(c.device, r.device) AS device, c.status, c.median_ms, c.tokens_per_s, c.memory_bytes, "
            "c.final_loss, c.parity FROM cases c JOIN runs r USING (run_id) "
            "ORDER BY COALESCE(r.created, ''), c.run_id, c.case_id, c.round").fetchall()
    good, problems = [], []
    for rowid, *row in rows:
        problem = _row_problem(tuple(row))
        if problem:
            problems.append(f"cases rowid {rowid}: {problem}")
        else:
            good.append(row)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        warnings.warn(f"{db}: skipped {len(problems)} unusable row(s): {shown}", stacklevel=2)
    df = pd.DataFrame(good, columns=[c for c, _ in _FRAME_COLUMNS])
    df["device"] = df["device"].fillna(UNKNOWN_DEVICE)
    df["created"] = df["created"].fillna("")
    # Oldest first by the instant, not by the text: a run's time is local with its offset, and runs made
    # under another time zone (another machine, or summer time) would sort out of order as text, so
    # that an older run could be taken for the latest. A time that does not parse keeps its place at
    # the start, as the SQL's order (by text, then run id) put it.
    instant = pd.to_datetime(df["created"], format="ISO8601", utc=True, errors="coerce")
    if instant.notna().any():
        df = df.loc[instant.sort_values(kind="stable", na_position="first").index].reset_index(drop=True)
    for column, kind in _FRAME_COLUMNS:
        if kind == _REAL:
            df[column] = df[column].astype(float)
    return df


def records(db: str | Path, run_ids: list[str]) -> list[CaseResult]:
    """The stored records of some runs."""
    if not run_ids:
        return []
    with _reading(db) as conn:
        q = f"SELECT rowid, record_json FROM cases WHERE run_id IN ({','.join('?' * len(run_ids))})"
        rows = conn.execute(q, run_ids).fetchall()
    out, problems = [], []
    for rowid, text in rows:
        # The same checks as a results line: a damaged stored record is skipped by its rowid.
        try:
            record = results.loads(text) if isinstance(text, str) else None
            if not isinstance(record, dict):
                raise RecordError("record_json", text, "not a JSON object")
            record.setdefault("type", "case")
            parsed = results.parse_record(record)
            if not isinstance(parsed, CaseResult):
                raise RecordError("type", record.get("type"), "not a case record")
            out.append(parsed)
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
            problems.append(f"cases rowid {rowid}: {exc}")
    if problems:
        warnings.warn(f"{db}: skipped {len(problems)} damaged stored record(s): {'; '.join(problems[:3])}",
                      stacklevel=2)
    return out
