"""``tebench merge``: shard runs joined into one run, parity judged again."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tebench.cli.paths import check_out_arg, check_results_paths
from tebench.cli.usage import UsageError, command_line
from tebench.errors import EXIT_BAD_INPUT
from tebench.cli.verdict_args import add_rejudge_arg


def cmd_merge(args: argparse.Namespace) -> int:
    """Join shard run directories into one run (and render its report)."""
    check_results_paths(args.shards)
    from tebench.run.outdir import OutLock
    from tebench.run.merge import MergeError, join, write

    out = check_out_arg(args.out)
    # OUT is a run directory like any other: a run or another merge writing it is not overwritten,
    # and nothing writes it while the merged file and its report are written.
    with OutLock(out, command_line()) as lock:
        try:
            merged = join(args.shards, out, args.rejudge)
        except MergeError as exc:
            raise UsageError(str(exc)) from None
        lock.hold()
        path = write(merged, out)
        print(f"merged {len(args.shards)} shard(s) into {path}")
        if merged.missing:
            print(f"missing shard(s): {', '.join(merged.missing)}", file=sys.stderr)
        if merged.missing_cases:
            from tebench.escape import for_terminal

            shown = "; ".join(merged.missing_cases[:20])
            more = f"; and {len(merged.missing_cases) - 20} more" if len(merged.missing_cases) > 20 else ""
            print(for_terminal(f"{len(merged.missing_cases)} case round(s) in no shard's results (not run, or the run "
                               f"was stopped; --resume that shard): {shown}{more}"), file=sys.stderr)
        if not args.no_report:
            from tebench.report import render

            # Judged just now over the merged records: the report takes those verdicts.
            report = render([path], out / "report")
            print(f"report: {report / 'index.html'}")
    incomplete = merged.missing or merged.missing_cases
    return EXIT_BAD_INPUT if (incomplete and args.require_complete) else 0



def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("merge", help="join shard results (tebench run --shard I/N) into one run")
    p.add_argument("shards", nargs="+", help="shard run directories or results files")
    p.add_argument("--out", required=True, help="directory for the merged results.jsonl and report/")
    p.add_argument("--require-complete", action="store_true",
                   help="exit 2 when a shard, or a case of a shard, is missing (the merge of those there is "
                        "still written: merge again when the late shard comes)")
    p.add_argument("--no-report", action="store_true", help="write the merged results.jsonl only, no report/")
    add_rejudge_arg(p)
    p.set_defaults(func=cmd_merge)
