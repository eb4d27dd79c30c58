"""``tebench compare``: two runs case by case; exit 1 on a regression beyond threshold and noise."""

from __future__ import annotations

import argparse
from typing import Any

from tebench.cli.common import UsageError, add_gate_args, check_results_paths, compare_options, emit, nothing_measured, strict_json


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare BASE and HEAD; exit 1 on a regression beyond threshold and noise."""
    check_results_paths([args.base, args.head])
    from tebench.analysis.compare import CompareError, compare, to_markdown

    opts = compare_options(args, args.count_env_changes)
    try:
        result = compare(args.base, args.head, opts=opts)
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    # Strict JSON (null for NaN/inf): what jq, browsers and other languages accept.
    text = strict_json(result.to_json()) if args.format == "json" else to_markdown(result)
    emit(text, args.out, args.format == "markdown")
    nothing_measured(result, "tebench compare")
    return result.exit_code



def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("compare", help="compare two runs: regressions beyond threshold and noise (exit 1)")
    p.add_argument("base", help="base results file or run directory")
    p.add_argument("head", help="head results file or run directory")
    add_gate_args(p)
    p.add_argument("--out", help="write to this file instead of stdout")
    p.add_argument("--count-env-changes", action="store_true",
                   help="count regressions even when base and head ran in different environments")
    p.set_defaults(func=cmd_compare)
