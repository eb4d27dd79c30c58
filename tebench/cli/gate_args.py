"""The comparison gate's options (``compare``, ``ab``) as the comparison's ``Options``, and what a gate
that measured nothing says."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tebench.cli.thresholds import thresholds
from tebench.schema.vocabulary import MAX_ROUNDS
from tebench.cli.usage import UsageError, integer, open_fraction


def add_gate_args(p: argparse.ArgumentParser) -> None:
    from tebench.analysis.defaults import CORRECTIONS, DEFAULT_ALPHA, MIN_ROUNDS  # numpy-free: --help stays fast

    p.add_argument("--threshold", action="append", default=[], metavar="METRIC=VALUE",
                   help="regression threshold per metric, as a percentage (time=5%%) or a fraction below 1 "
                   "(time=0.05): time, memory, energy (energy per token; each default 5%%), loss (default 10%%)")
    p.add_argument("--alpha", type=open_fraction, default=DEFAULT_ALPHA,
                   help="error rate across all cases of the comparison (default %(default)s)")
    p.add_argument("--correction", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison control across cases: holm (family-wise) or bh (false discovery)")
    p.add_argument("--min-rounds", type=integer, default=MIN_ROUNDS,
                   help="rounds per side below which step time is inconclusive (default %(default)s)")
    p.add_argument("--gate-launch-bound", action="store_true",
                   help="count step-time regressions of launch-bound cases (GPU busy < 50%%), advisory by default")
    p.add_argument("--fail-on-missing", action="store_true", help="a case in base but not in head fails the gate")
    p.add_argument("--fail-on-inconclusive", action="store_true",
                   help="an inconclusive case (too few rounds, an interval beyond the threshold) fails the gate")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown",
                   help="markdown (a PR comment; the default) or json (every case's numbers, for a script)")


def compare_options(args: argparse.Namespace, count_env_changes: bool):
    from tebench.analysis.compare import CompareError, Options

    # Options' own check speaks of its field (min_rounds); the user typed the option and a value.
    if args.min_rounds < 2:
        raise UsageError(f"--min-rounds {args.min_rounds}: must be at least 2 (a spread needs two values)")
    if args.min_rounds > MAX_ROUNDS:  # no run has more rounds: no case could ever be judged
        raise UsageError(f"--min-rounds {args.min_rounds}: must be at most {MAX_ROUNDS}, the most rounds a run has")
    try:
        return Options(thresholds=thresholds(args.threshold), alpha=args.alpha, correction=args.correction,
                       min_rounds=args.min_rounds, gate_launch_bound=args.gate_launch_bound,
                       fail_on_missing=args.fail_on_missing, count_env_changes=count_env_changes,
                       fail_on_inconclusive=getattr(args, "fail_on_inconclusive", False))
    except CompareError as exc:
        raise UsageError(str(exc)) from None


def nothing_measured(result: Any, prog: str) -> None:
    """Say why a comparison with no case measured on both sides exits 2."""
    from tebench.analysis.compare import UNMEASURED

    if not result.measured:
        kinds = ", ".join(f"{result.count(v)} {v}" for v in UNMEASURED if result.count(v))
        print(f"{prog}: error: no case was measured on both sides ({kinds or 'no cases'}); "
              "see the per-case reasons above", file=sys.stderr)
