"""``tebench compare``: two runs case by case; exit 1 on a regression beyond threshold and noise."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from tebench.cli.gate_args import add_gate_args, compare_options, nothing_measured
from tebench.cli.output import emit, step_summary, strict_json
from tebench.cli.paths import check_out_arg, check_results_paths, refuse_inputs, refuse_measured
from tebench.cli.usage import UsageError, command_line
from tebench.cli.verdict_args import add_rejudge_arg

def cmd_compare(args: argparse.Namespace) -> int:
    """Compare BASE and HEAD; exit 1 on a regression beyond threshold and noise."""
    check_results_paths([args.base, args.head])
    # --out is checked before the comparison's modules are imported, as run's and report's are: a
    # directory, a FIFO or a device in the way is refused at once.
    if args.out is not None:
        out = check_out_arg(args.out, kind="file")
        refuse_inputs([out], [args.base, args.head], "--out", args.out)
        refuse_measured(out, "--out", args.out)  # another run's results, a history database
    if args.format == "markdown":
        step_summary()  # $GITHUB_STEP_SUMMARY: a FIFO or a device there is refused now, not after the work
    from tebench.analysis.compare import CompareError, compare
    from tebench.report.compare_markdown import to_markdown
    from tebench.run.outdir import lock_target

    opts = compare_options(args, args.count_env_changes)
    opts.drop_throttled = args.drop_throttled
    # A file in a run directory (OUT/compare.md) is written under that directory's lock, atomically.
    with lock_target(Path(args.out), command_line()) if args.out else contextlib.nullcontext():
        try:
            result = compare(args.base, args.head, opts=opts, rejudge=args.rejudge)
        except CompareError as exc:
            raise UsageError(str(exc)) from None
        # Strict JSON (null for NaN/inf): what jq, browsers and other languages accept.
        text = strict_json(result.to_json()) if args.format == "json" else to_markdown(result)
        emit(text, args.out, args.format == "markdown")
    nothing_measured(result, "tebench compare")
    if result.base_damaged:
        import sys

        from tebench.escape import for_terminal

        first = result.base_damaged[0]
        print(f"tebench compare: error: {for_terminal(args.base)}: the base run's measurements are damaged in "
              f"{len(result.base_damaged)} case(s) (first: {for_terminal(first.case_id)}: "
              f"{for_terminal('; '.join(first.why))}); that is bad input, not a regression of the head",
              file=sys.stderr)
    return result.exit_code



def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("compare", help="compare two runs: regressions beyond threshold and noise (exit 1)")
    p.add_argument("base", help="base results file or run directory")
    p.add_argument("head", help="head results file or run directory")
    add_gate_args(p)
    add_rejudge_arg(p)
    p.add_argument("--out", help="write to this file instead of stdout")
    p.add_argument("--count-env-changes", action="store_true",
                   help="count regressions even when base and head ran in different environments (or at "
                   "different power limits or maximum SM clocks)")
    p.add_argument("--drop-throttled", action="store_true",
                   help="leave rounds that ran under thermal or hardware slowdown out of the time test")
    p.set_defaults(func=cmd_compare)
