"""``tebench history``: nightly history in SQLite (add runs, render trends)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tebench.cli.common import MAX_ROUNDS, UsageError, check_out_arg, command_line, thresholds

SQLITE_MAGIC = b"SQLite format 3\x00"


def check_db(db: str, must_exist: bool) -> None:
    """UsageError unless ``db`` is an SQLite database file (or, for ``add``, a new path)."""
    path = Path(db)
    if path.is_dir():
        raise UsageError(f"--db {db}: is a directory, not an SQLite database file")
    if not path.exists():
        if must_exist:
            raise UsageError(f"{db}: no such history database (create it with 'tebench history add')")
        return
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head and head != SQLITE_MAGIC:
        raise UsageError(f"--db {db}: not an SQLite database (it starts with {head[:8]!r})")


def cmd_history_add(args: argparse.Namespace) -> int:
    import sqlite3

    from tebench.store import history

    check_db(args.db, must_exist=False)
    for path in args.results:
        try:
            added = history.add(args.db, path)
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"--db {args.db}: {exc}") from None
        state = "added" if added.new_run else ("updated" if added.new_cases else "already stored")
        print(f"{path}: run {added.run_id} {state} ({added.new_cases} new case record(s), {added.total_cases} in all)")
    return 0


def cmd_history_report(args: argparse.Namespace) -> int:
    out = check_out_arg(args.out)
    from tebench.store import history

    check_db(args.db, must_exist=True)
    if not 1 <= args.window <= MAX_ROUNDS:
        raise UsageError(f"--window {args.window}: must be 1 to {MAX_ROUNDS}")
    if args.confirm < 1:
        raise UsageError(f"--confirm {args.confirm}: must be at least 1")
    from tebench.run.outdir import lock_target

    with lock_target(out, command_line()):  # history.html into a run directory: not while a run writes it
        out = history.report(args.db, out, args.window, thresholds(args.threshold), args.confirm)
    print(f"history: {out / 'history.html'}\n         {out / 'history.md'}")
    return 0



def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("history", help="nightly history in SQLite: add runs, render trends")
    hsub = p.add_subparsers(dest="history_command", required=True, metavar="ACTION")
    h = hsub.add_parser("add", help="store results in the database (idempotent, safe concurrently)")
    h.add_argument("results", nargs="+", help="results files or run directories")
    h.add_argument("--db", required=True, help="SQLite database file (created if missing)")
    h.set_defaults(func=cmd_history_add)
    h = hsub.add_parser("report", help="trend charts, step changes, latest run vs recent baseline")
    h.add_argument("--db", required=True)
    h.add_argument("--out", required=True)
    h.add_argument("--window", type=int, default=5, help="how many earlier runs form the baseline")
    h.add_argument("--threshold", action="append", default=[], metavar="METRIC=VALUE",
                   help="as for compare: time=5%% or time=0.05")
    h.add_argument("--confirm", type=int, default=3,
                   help="runs that must follow a change before it is reported (default %(default)s)")
    h.set_defaults(func=cmd_history_report)
