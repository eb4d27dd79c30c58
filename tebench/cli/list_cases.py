"""``tebench list``: a matrix expanded, every case with run or skip and why; nothing runs."""

from __future__ import annotations

import argparse
from typing import Any

from tebench.cli.matrix_args import add_matrix_args, is_auto, load_matrix, parse_shard, select


def cmd_list(args: argparse.Namespace) -> int:
    """Expand a matrix and show every case with run/skip and the reason, running nothing."""
    from tebench.escape import for_terminal as safe
    from tebench.plan.environment import probe
    from tebench.plan.gates import gate_case
    from tebench.plan.matrix import exclusion_text, expand
    from tebench.plan.shards import estimate_seconds

    # The matrix is validated before the hardware is probed: bad input fails fast.
    mat = None if is_auto(args) else load_matrix(args)
    shard_spec = parse_shard(args)
    cases = select(mat, args.only, shard_spec) if mat is not None else None
    env = probe(cached=True)
    if mat is None or cases is None:  # both or neither: a matrix that needs the machine to load
        mat = load_matrix(args, env)
        cases = select(mat, args.only, shard_spec)
    runs, total_s = 0, 0.0
    # Names, reasons and paths come from the matrix (and plugins): shown, never obeyed by the terminal.
    print(safe(f"matrix {mat.name} ({mat.source}), {len(cases)} case(s) on {env.device_name}"))
    for case in cases:
        reason = gate_case(case, env)
        runs += reason is None
        status = "run " if reason is None else "skip"
        if reason is None:
            seconds = estimate_seconds(case, env)
            total_s += seconds
            estimate = f"~{_duration(seconds):>6}"
        else:
            estimate = f"{'':>7}"  # a skipped case costs nothing
        print(safe(f"  {status} {case.id:<60} {estimate}" + (f"  {reason}" if reason else "")))
    print(f"{runs} to run, {len(cases) - runs} skipped; about {_duration(total_s)} in all, estimated from "
          f"{_rate_basis(env)} (a rough guide: start-up and compilation dominate small cases)")
    excluded = expand(mat).excluded
    if excluded:
        print(f"excluded by the matrix's [[exclude]] rules ({sum(e.cases for e in excluded)} case(s)):")
        for rule in excluded:
            print(f"  - {safe(exclusion_text(rule.to_dict()))}")
    return 0



def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _rate_basis(env: Any) -> str:
    from tebench.plan.shards import CPU_EFFICIENCY, GPU_EFFICIENCY

    if env.device_type == "cuda" and env.peak_tflops:
        return f"{GPU_EFFICIENCY:.0%} of the GPU's datasheet peak ({env.peak_tflops.bf16} TFLOP/s BF16)"
    if env.device_type == "cpu" and env.cpu_gflops:
        return f"{CPU_EFFICIENCY:.0%} of this CPU's measured matmul rate ({env.cpu_gflops:.0f} GFLOP/s)"
    return "a nominal 200 TFLOP/s (this machine's rate is unknown)"


def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("list", help="expand a matrix: every case, run or skip, and why")
    add_matrix_args(p)
    p.set_defaults(func=cmd_list)
