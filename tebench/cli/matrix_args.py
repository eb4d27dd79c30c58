"""The arguments that choose the cases (a matrix file or ``--preset``, ``--only``, ``--shard``) of
``list``, ``run`` and ``ab``, and the matrix and cases they choose."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tebench.cli.usage import UsageError, nonempty


def add_matrix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("matrix", nargs="?", help="a matrix file (TOML); default: --preset auto")
    from tebench.plan.matrix import preset_names  # torch-free; the list is the presets directory's

    p.add_argument("--preset", type=nonempty("--preset"), help="a shipped preset: auto (smoke on CPU, tutorial on a GPU), "
                   + ", ".join(preset_names()))
    p.add_argument("--only", action="append", default=[], metavar="GLOB",
                   help="only the cases whose id matches (repeatable), e.g. 'gpt/*/TE-*'")
    p.add_argument("--shard", metavar="I/N", type=nonempty("--shard", "I/N (e.g. 1/2) or leave the option out"), help="run shard I of N (cost-balanced, deterministic)")


def load_matrix(args: argparse.Namespace, env: Any = None):
    from tebench.plan import matrix

    if args.matrix and args.preset:
        raise UsageError("give a matrix file or --preset, not both")
    if args.matrix:
        return matrix.load(args.matrix)
    name = args.preset or "auto"
    if name == "auto":
        if env is None:
            from tebench.plan.environment import probe

            env = probe()
        name = "tutorial" if env.device_type == "cuda" else "smoke"
        # The default picks for the user: say which, and why, once (a CPU's smoke run is no GPU benchmark).
        why = "a CUDA GPU is present" if env.device_type == "cuda" else "no CUDA GPU here"
        print(f"tebench: --preset auto: {name} ({why})", file=sys.stderr)
    return matrix.load(name, is_preset=True)


def select(mat: Any, only: list[str], shard_spec: tuple[int, int] | None, what: str = "--only / --shard") -> list:
    """The cases ``--only`` and ``--shard`` select from ``mat``; UsageError when none, naming each glob
    that matched nothing and the case ids close to it. A glob that matches nothing beside others that
    do is warned about: it is most likely a typo."""
    import warnings

    from tebench.plan.matrix import expand
    from tebench.plan.schedule import select_cases, selected_beyond_shard, unmatched_only

    cases = select_cases(mat, only, shard_spec)
    expansion = expand(mat) if only else None
    unmatched = unmatched_only(expansion.cases, only, expansion.excluded) if expansion else []
    if not cases:
        if unmatched:
            raise UsageError("; ".join(unmatched))
        selected = selected_beyond_shard(mat, only, shard_spec)
        if shard_spec and selected:
            warnings.warn(f"shard {shard_spec[0]}/{shard_spec[1]} holds none of the {selected} selected case(s): "
                          "nothing to run here", stacklevel=2)
            return cases
        raise UsageError(f"no case of the matrix matches {what}")
    for line in unmatched:
        warnings.warn(line, stacklevel=2)
    return cases


def is_auto(args: argparse.Namespace) -> bool:
    """Whether the matrix depends on the hardware (``--preset auto``, the default)."""
    return not args.matrix and (args.preset or "auto") == "auto"


def parse_shard(args: argparse.Namespace) -> tuple[int, int] | None:
    from tebench.plan import shards as shard

    return shard.parse(args.shard) if args.shard else None
