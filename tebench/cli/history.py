"""``tebench history``: nightly history in SQLite (add runs, render trends).

``add`` stores results files (:mod:`tebench.store.history`). ``report`` reads the
database (store), finds the changes in every series and judges the latest run
(:mod:`tebench.analysis.history_changes`, :mod:`tebench.analysis.history_latest`),
and writes the page (:mod:`tebench.report.history_page`): :func:`report` does those
steps in that order, and the command checks its arguments before it.
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path
from typing import Any

from tebench.cli.paths import check_out_arg, check_results_paths
from tebench.cli.thresholds import thresholds
from tebench.schema.vocabulary import MAX_ROUNDS
from tebench.cli.usage import UsageError, command_line, integer, nonempty
from tebench.cli.verdict_args import add_rejudge_arg
from tebench.escape import for_terminal


def check_db(db: str, must_exist: bool) -> None:
    """UsageError unless ``db`` is tebench's history database (or, for ``add``, a path to make one at):
    refused before anything is written to it, and before the heavier history module is imported."""
    from tebench.store.history_db import HistoryError, check

    try:
        state = check(db)
    except HistoryError as exc:
        raise UsageError(f"--db {exc}") from None
    if state == "new" and not must_exist and not os.path.isdir(os.path.dirname(os.path.abspath(db))):
        raise UsageError(f"--db {db}: no such directory {os.path.dirname(db) or '.'} to create the database in")
    if state == "new" and not must_exist and not os.access(os.path.dirname(os.path.abspath(db)), os.W_OK):
        raise UsageError(f"--db {db}: cannot create the database: its directory is not writable (read-only?)")
    if state == "new" and must_exist:
        what = "an empty file, no history database yet" if os.path.exists(db) else "no such history database"
        raise UsageError(f"--db {db}: {what} (create it with 'tebench history add')")


def report(db: str | Path, out: str | Path, window: int = 5, thresholds: dict[str, float] | None = None,
           confirm: int = 3) -> Path:
    """Render ``history.html`` and ``history.md`` (+ ``trends.png``) of the database ``db`` into ``out``.

    The latest run of each device is judged against the ``window`` runs before it (``thresholds``
    as for compare), and the loss-parity verdicts that moved over those runs are listed; a change is
    reported once ``confirm`` runs follow it. HistoryError for a
    database that cannot be read.
    """
    from tebench.analysis import compare
    from tebench.analysis.history_changes import trends
    from tebench.analysis.history_latest import latest_vs_recent
    from tebench.analysis.verdict_moves import history_table
    from tebench.report import history_page
    from tebench.store import history

    df = history.frame(db)
    opts = compare.Options(thresholds=dict(thresholds or {}))
    series = trends(df, opts.thresholds["time"], confirm)
    deltas, info = latest_vs_recent(db, window, opts=opts, df=df)
    return history_page.render(out, db, df, series, deltas, info, window, confirm, opts, history_table(db, df, window))


def cmd_history_add(args: argparse.Namespace) -> int:
    check_db(args.db, must_exist=False)
    check_results_paths(args.results)
    from tebench.analysis import judged_run
    from tebench.store import history  # pandas and the rest: only for input known to be good

    for path in args.results:
        # A file of several runs (runs appended to one file) is stored as its runs, one by one.
        for run in judged_run.runs_in(path, args.rejudge):
            try:
                added = history.add(args.db, run)
            except history.HistoryError as exc:
                raise UsageError(str(exc)) from None
            state = "added" if added.new_run else ("updated" if added.new_cases else "already stored")
            print(for_terminal(f"{path}: run {added.run_id} {state} ({added.new_cases} new case record(s), "
                               f"{added.total_cases} in all)"))
            if added.differing:
                more = f"; and {len(added.differing) - 1} more" if len(added.differing) > 1 else ""
                warnings.warn(f"{path}: {len(added.differing)} record(s) of run {added.run_id} are stored with other "
                              f"values than this file's (first: {added.differing[0]}{more}); the stored ones are kept. "
                              "A run id names one run: a file edited since, or judged by other rules, is not that "
                              "run's", stacklevel=2)
            if not run.cases:
                # An empty shard, or a run stopped before its first case: stored, but it adds no measurement.
                warnings.warn(f"{path}: run {added.run_id} holds no case record (an empty shard, or a run stopped "
                              "before its first case): nothing measured to compare", stacklevel=2)
    return 0


def cmd_history_report(args: argparse.Namespace) -> int:
    out = check_out_arg(args.out)
    if not 1 <= args.window <= MAX_ROUNDS:
        raise UsageError(f"--window {args.window}: must be 1 to {MAX_ROUNDS}")
    if not 1 <= args.confirm <= MAX_ROUNDS:  # more than any history holds: no change could ever be confirmed
        raise UsageError(f"--confirm {args.confirm}: must be 1 to {MAX_ROUNDS}")
    check_db(args.db, must_exist=True)
    from tebench.run.outdir import lock_target
    from tebench.store.history_db import HistoryError

    with lock_target(out, command_line()):  # history.html into a run directory: not while a run writes it
        try:
            out = report(args.db, out, args.window, thresholds(args.threshold), args.confirm)
        except HistoryError as exc:
            raise UsageError(f"--db {exc}") from None
    print(f"history: {out / 'history.html'}\n         {out / 'history.md'}")
    return 0


def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("history", help="nightly history in SQLite: add runs, render trends")
    hsub = p.add_subparsers(dest="history_command", required=True, metavar="ACTION")
    h = hsub.add_parser("add", help="store results in the database (idempotent, safe concurrently)")
    h.add_argument("results", nargs="+", help="results files or run directories")
    h.add_argument("--db", required=True, type=nonempty("--db", "a file"), help="SQLite database file (created if missing)")
    add_rejudge_arg(h)
    h.set_defaults(func=cmd_history_add)
    h = hsub.add_parser("report", help="trend charts, step changes, latest run vs recent baseline")
    h.add_argument("--db", required=True, type=nonempty("--db", "a file"), help="the SQLite database that history add wrote")
    h.add_argument("--out", required=True,
                   help="directory for the history report (history.html, history.md, trends.png)")
    h.add_argument("--window", type=integer, default=5, help="how many earlier runs form the baseline (default 5)")
    h.add_argument("--threshold", action="append", default=[], metavar="METRIC=VALUE",
                   help="as for compare: time=5%% or time=0.05")
    h.add_argument("--confirm", type=integer, default=3,
                   help="runs that must follow a change before it is reported (default %(default)s)")
    h.set_defaults(func=cmd_history_report)
