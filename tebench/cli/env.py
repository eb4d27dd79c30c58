"""``tebench env``: what was detected here, and what each mode and recipe would do."""

from __future__ import annotations

import argparse
import json
from typing import Any


def cmd_env(args: argparse.Namespace) -> int:
    """Print what was detected and what each mode and recipe would do here."""
    from tebench.plan.environment import probe
    from tebench.plan.modes import FP8_MODES, MODES
    from tebench.plan.recipes import RECIPES
    from tebench.plan.torchao_support import describe as describe_torchao

    env = probe()
    if args.json:
        print(json.dumps(env.to_dict(), indent=2))
        return 0
    rows = [
        ("device", env.device_name),
        ("GPUs", ", ".join(f"{g.index}: {g.name} (CC {g.capability[0]}.{g.capability[1]}, "
                           f"{g.memory_bytes / 2**30:.0f} GiB)" for g in env.gpus) or "none"),
        ("driver / CUDA / cuDNN", f"{env.driver or '-'} / {env.cuda or '-'} / {env.cudnn or '-'}"),
        ("torch", env.torch),
        ("Transformer Engine", env.te or f"not importable: {env.te_error}"),
        ("torchao", describe_torchao(env.torchao, env.torchao_error, env.torch or "")),
        ("torch.compile", "yes" if env.compile.ok else f"no: {env.compile.reason}"),
        ("peak (dense BF16)", f"{env.peak_tflops.bf16} TFLOP/s ({env.peak_tflops.source})"
         if env.peak_tflops else "unknown GPU: no MFU"),
        ("Python / CPU", f"{env.python} / {env.cpu} x{env.cpu_count}"),
        ("tebench", f"{env.tebench} ({env.git_commit or 'not a git checkout'}{' dirty' if env.git_dirty else ''})"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print("\nmodes:")
    for mode in MODES.values():
        reason = mode.gate(env)
        print(f"  {mode.name:<15} {'runs' if not reason else 'skipped: ' + reason}")
    for name in FP8_MODES:
        mode = MODES[name]
        print(f"{name} recipes:")
        for spec in RECIPES.values():
            if spec.library == mode.fp8:
                reason = mode.gate(env) or spec.gate(env)
                print(f"  {spec.name:<18} {'runs' if not reason else 'skipped: ' + reason}")
    return 0



def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("env", help="show detected hardware/software and what each mode would do")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_env)
