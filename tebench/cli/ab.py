"""``tebench ab``: base and head interleaved (ABBA) on one device, compared round by round."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from tebench.cli.gate_args import add_gate_args, compare_options, nothing_measured
from tebench.cli.matrix_args import load_matrix, select
from tebench.cli.output import emit, step_summary, strict_json
from tebench.cli.paths import check_out_arg
from tebench.cli.run_args import add_cost_args, check_launch_args, check_test_faults, check_timeout, compile_cache_dir
from tebench.schema.vocabulary import MAX_ROUNDS
from tebench.cli.usage import UsageError, integer, nonempty, number, parse_devices


def _check_python(python: str | None, flag: str) -> None:
    """UsageError unless ``python`` names an executable (as a path, or on PATH): before anything runs it."""
    if python is None:
        return
    found = shutil.which(python) if os.sep not in python else (python if os.access(python, os.X_OK) else None)
    if not found or not Path(found).is_file():
        raise UsageError(f"{flag} {python}: no such executable")


def _check_out(out: Path) -> None:
    """UsageError unless ``out`` is (or can become) a directory with no results of an earlier ab run."""
    from tebench.store.reader import RESULTS_NAME

    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: is a file, not a directory")
    for side in ("base", "head"):
        if (out / side).exists() and not (out / side).is_dir():
            raise UsageError(f"--out {out}: {out / side} is a file, not a directory")
        if (out / side / RESULTS_NAME).exists():
            raise UsageError(f"{out / side / RESULTS_NAME} already exists; choose another --out")


def cmd_ab(args: argparse.Namespace) -> int:
    """Run base and head interleaved (ABBA) on one device, compare round by round; exit 1 on a regression."""
    # Everything that can be checked without the hardware is checked before either side's
    # interpreter is started (each start imports torch and probes the machine: seconds).
    if args.matrix and args.preset:
        raise UsageError("give a matrix file or --preset, not both")
    if not 1 <= args.rounds <= MAX_ROUNDS:
        raise UsageError(f"--rounds must be at least 1 and at most {MAX_ROUNDS}, not {args.rounds}")
    check_out_arg(args.out)
    device = parse_devices(args.device, "--device")
    if device is not None and len(device) != 1:
        raise UsageError(f"--device {args.device}: expected one GPU index, e.g. 0 (both sides run on it)")
    check_timeout(args.timeout)
    check_test_faults()
    _check_python(args.base_python, "--base-python")
    _check_python(args.head_python, "--head-python")
    _check_out(Path(args.out))
    if args.format == "markdown":
        step_summary()  # $GITHUB_STEP_SUMMARY: a FIFO or a device there is refused before hours of rounds
    prestart_depth = check_launch_args(args)
    gate = compare_options(args, True)
    gate.drop_throttled = args.drop_throttled
    from tebench.report.compare_markdown import to_markdown
    from tebench.run import ab

    try:
        opts = ab.ABOptions(
            out=Path(args.out), rounds=args.rounds,
            base=ab.SideSpec(args.base_python or sys.executable, ab.parse_env(args.base_env, "--base-env")),
            head=ab.SideSpec(args.head_python or sys.executable, ab.parse_env(args.head_env, "--head-env")),
            device=device[0] if device else None, only=args.only, timeout_s=args.timeout,
            live=False if args.quiet else None,
            command=["tebench", *sys.argv[1:]], compare=gate,
            launch=args.launch, prestart_depth=prestart_depth,
            pause=not args.no_pause)
        mat = load_matrix(args)  # --preset auto probes this machine to choose
        select(mat, args.only, None, "--only")
        opts.compile_cache = compile_cache_dir(args.compile_cache)  # created only for input known to be good
        result = ab.run(mat, opts)
    except ab.ABError as exc:
        raise UsageError(str(exc)) from None
    text = strict_json(result.to_json()) if args.format == "json" else to_markdown(result, title="tebench ab")
    print(f"\nbase:    {opts.out / 'base' / 'results.jsonl'}\nhead:    {opts.out / 'head' / 'results.jsonl'}\n"
          f"compare: {opts.out / 'compare.md'}\n         {opts.out / 'compare.json'}\n", file=sys.stderr)
    emit(text, None, args.format == "markdown")
    nothing_measured(result, "tebench ab")
    return result.exit_code


def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("ab", help="run base and head interleaved (ABBA) on one device and compare (exit 1)")
    p.add_argument("matrix", nargs="?", help="a matrix file (TOML); default: --preset auto")
    p.add_argument("--preset", type=nonempty("--preset"), help="a shipped preset, as for run")
    p.add_argument("--only", action="append", default=[], metavar="GLOB", help="run only matching cases")
    p.add_argument("--out", required=True, help="directory for base/, head/, compare.md and compare.json")
    p.add_argument("--rounds", type=integer, default=5, help="rounds per side (default %(default)s; at least "
                   "3 are needed for a verdict)")
    p.add_argument("--base-python", metavar="PY", help="interpreter of the base side (default: this one)")
    p.add_argument("--head-python", metavar="PY", help="interpreter of the head side (default: this one)")
    p.add_argument("--base-env", action="append", default=[], metavar="K=V", help="environment variable "
                   "for the base side's cases (repeatable)")
    p.add_argument("--head-env", action="append", default=[], metavar="K=V", help="environment variable "
                   "for the head side's cases (repeatable)")
    p.add_argument("--device", help="GPU index both sides run on (default: the default device)")
    p.add_argument("--timeout", type=number, help="per-case wall-clock limit in seconds (overrides the matrix)")
    p.add_argument("--quiet", action="store_true", help="no live progress line")
    add_cost_args(p)
    add_gate_args(p)
    p.add_argument("--drop-throttled", action="store_true",
                   help="leave rounds that ran under thermal or hardware slowdown out of the time test")
    p.set_defaults(func=cmd_ab)
