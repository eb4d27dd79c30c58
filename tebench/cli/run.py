"""``tebench run``: run a matrix into a run directory, then render its report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tebench.cli.matrix_args import add_matrix_args, is_auto, load_matrix, parse_shard, select
from tebench.cli.paths import check_out_arg
from tebench.cli.run_args import add_cost_args, check_launch_args, check_test_faults, check_timeout, compile_cache_dir
from tebench.schema.vocabulary import MAX_ROUNDS
from tebench.cli.usage import UsageError, command_line, integer, number, parse_devices


def _check_run_args(args: argparse.Namespace) -> tuple[list[str] | None, tuple[int, int] | None]:
    """UsageError for run options that are wrong on any machine; returns (devices, shard)."""
    if not 1 <= args.rounds <= MAX_ROUNDS:
        raise UsageError(f"--rounds must be at least 1 and at most {MAX_ROUNDS}, not {args.rounds}")
    check_timeout(args.timeout)
    check_test_faults()
    devices = parse_devices(args.devices)
    check_out_arg(args.out)
    check_launch_args(args)
    return devices, parse_shard(args)


def cmd_run(args: argparse.Namespace) -> int:
    """Run a matrix, write results.jsonl as cases finish, then a report."""
    from tebench.plan.environment import probe

    # Everything that can be checked without the hardware is checked first.
    devices, shard_spec = _check_run_args(args)
    mat = None if is_auto(args) else load_matrix(args)
    # numpy and the rest: only once the input is known to be good
    from tebench.run.options import RunOptions
    from tebench.run.outdir import OutLock
    from tebench.run.runner import run_locked

    if mat is not None:
        select(mat, args.only, shard_spec)  # refused before the probe, too
    compile_cache = compile_cache_dir(args.compile_cache)  # created now: only for input known to be good
    out = Path(args.out)
    # Held until the report is written: no other command writes OUT meanwhile (a merge into it
    # would replace the records). An existing OUT is locked now, so a second writer is refused
    # before the probe; a new one only once the devices are known to exist (a refusal leaves none).
    with OutLock(out, command_line()) as lock:
        env = probe()
        if mat is None:
            mat = load_matrix(args, env)
            select(mat, args.only, shard_spec)
        if devices and env.device_type != "cuda":
            # Still run: on a CPU the indices are slots (cases run that many at a time), which the
            # scheduler's tests use; but a user who meant GPUs must hear that there are none.
            print(f"tebench run: --devices {args.devices}: this machine has no CUDA GPU; the cases run on the "
                  f"CPU, {len(devices)} at a time", file=sys.stderr)
        if devices and env.device_type == "cuda":
            absent = [d for d in devices if int(d) >= len(env.gpus)]
            if absent:
                raise UsageError(f"--devices {args.devices}: no such GPU {absent} ({len(env.gpus)} visible)")
        lock.hold()
        opts = RunOptions(
            out=out, rounds=args.rounds, resume=args.resume, timeout_s=args.timeout,
            devices=devices, shard=shard_spec, only=args.only,
            live=False if args.quiet else None, command=["tebench", *sys.argv[1:]],
            launch=args.launch, compile_cache=compile_cache, prestart_depth=args.prestart_depth,
            pause=not args.no_pause,
        )
        path = run_locked(mat, env, opts)
        from tebench.analysis import judged_run
        from tebench.escape import terminal_lines

        # Parity judged again over the whole run, as the report judges it: --strict and the report agree.
        run = judged_run.read(path)
        print(f"\nresults: {path}")
        if not args.no_report:
            from tebench.report import render

            report = render([path], out / "report")
            print(f"report:  {report / 'index.html'}\n         {report / 'report.md'}")
    # An inconclusive verdict is not a pass: --strict fails on it too (CaseResult.problem).
    bad = run.problem_cases
    if bad:
        print(f"{len(bad)} case(s) not ok, failing or inconclusive on loss parity:", file=sys.stderr)
        for r in bad:
            first, more = terminal_lines(f"  {r.status:<8} {r.case_id}: {r.why}")
            print("\n".join([first, *more]), file=sys.stderr)
    return 1 if (bad and args.strict) else 0



def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("run", help="run a matrix and write results (and a report)")
    add_matrix_args(p)
    p.add_argument("--out", required=True,
                   help="run directory (results.jsonl, logs/, report/); a finished run already there is kept, "
                        "moved to OUT/previous/<run id>/")
    p.add_argument("--rounds", type=integer, default=1, help="repeat the matrix R times, interleaved")
    p.add_argument("--resume", action="store_true", help="continue a killed run in --out")
    p.add_argument("--timeout", type=number, help="per-case wall-clock limit in seconds (overrides the matrix)")
    p.add_argument("--devices", help="comma-separated GPU indices: one case per GPU at a time")
    p.add_argument("--no-report", action="store_true", help="do not render the report at the end")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any case is not ok (skips excepted), fails loss parity or is inconclusive")
    p.add_argument("--quiet", action="store_true", help="no live progress line")
    add_cost_args(p)
    p.set_defaults(func=cmd_run)
