"""``tebench list``: a matrix expanded, every case with run or skip and why; nothing runs."""

from __future__ import annotations

import argparse
from typing import Any

from tebench.cli.common import add_matrix_args, is_auto, load_matrix, parse_shard, select


def cmd_list(args: argparse.Namespace) -> int:
    """Expand a matrix and show every case with run/skip and the reason, running nothing."""
    from tebench.escape import for_terminal as safe
    from tebench.plan.environment import probe
    from tebench.plan.gates import gate_case
    from tebench.plan.matrix import exclusion_text, expand
    from tebench.plan.shards import estimate_cost

    # The matrix is validated before the hardware is probed: bad input fails fast.
    mat = None if is_auto(args) else load_matrix(args)
    shard_spec = parse_shard(args)
    cases = select(mat, args.only, shard_spec) if mat is not None else None
    env = probe(cached=True)
    if mat is None:
        mat = load_matrix(args, env)
        cases = select(mat, args.only, shard_spec)
    runs = 0
    # Names, reasons and paths come from the matrix (and plugins): shown, never obeyed by the terminal.
    print(safe(f"matrix {mat.name} ({mat.source}), {len(cases)} case(s) on {env.device_name}"))
    for case in cases:
        reason = gate_case(case, env)
        runs += reason is None
        status = "run " if reason is None else "skip"
        print(safe(f"  {status} {case.id:<60} ~{estimate_cost(case):5.0f}s" + (f"  {reason}" if reason else "")))
    print(f"{runs} to run, {len(cases) - runs} skipped")
    excluded = expand(mat).excluded
    if excluded:
        print(f"excluded by the matrix's [[exclude]] rules ({sum(e.cases for e in excluded)} case(s)):")
        for rule in excluded:
            print(f"  - {safe(exclusion_text(rule.to_dict()))}")
    return 0



def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("list", help="expand a matrix: every case, run or skip, and why")
    add_matrix_args(p)
    p.set_defaults(func=cmd_list)
