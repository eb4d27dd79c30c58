"""Hardware and software detection, in a child process: ``python -m tebench.worker.probe``.

The parent never touches CUDA (a CUDA error or an OOM there could not be
recovered from), so detection runs here and prints one JSON object that
:func:`tebench.plan.environment.probe` parses. Everything a gate needs is in it,
and the same object is stored in every results file's header.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any
from tebench import __version__
from tebench.plan.peak_tflops import peak_for
from tebench.plan.environment import cpu_model, ENV_PREFIXES, TE_API, TE_RECIPE_CLASSES, _git_state
from tebench.schema.environment import Environment, GPU, Support



def _nvidia_smi() -> tuple[str | None, dict[str, Any]]:
    """Driver version and per-GPU clocks/power limit, where nvidia-smi can read them."""
    if not shutil.which("nvidia-smi"):
        return None, {}
    fields = "index,driver_version,clocks.max.sm,clocks.max.mem,clocks.sm,power.limit,power.max_limit"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None, {}
    driver, clocks = None, {}
    names = fields.split(",")
    for line in out.strip().splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(names):
            continue
        row = dict(zip(names, values))
        driver = row.pop("driver_version")
        clocks[row.pop("index")] = row
    return driver, clocks


def triton_c_compiler_problem(environ: Mapping[str, str] | None = None, which=shutil.which) -> str | None:
    """Why Triton could not build its CUDA launcher, or None.

    Triton compiles a small C module when its CUDA driver starts, before any kernel runs, with
    ``$CC`` if that is set and otherwise gcc or clang from PATH. A ``CC`` that names no
    executable (a script that reused the name for a directory did, on an H200) failed every
    torch.compile case after its tracing, 20-70 s each, with only the path in the error.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    cc = env.get("CC")
    if cc is not None:
        # Triton runs $CC as one program name (no flags), so that is what has to resolve.
        if not cc or not which(cc):
            return (f"torch.compile on CUDA: Triton builds its launcher with $CC, and CC={cc!r} is not an "
                    "executable (unset it, or point it at gcc or clang)")
        return None
    if not (which("gcc") or which("clang")):
        return ("torch.compile on CUDA: Triton builds its launcher with a C compiler, and neither gcc nor clang "
                "is on PATH (nor is CC set)")
    return None


def _compile_support(device_type: str) -> Support:
    """Cheap checks for a working torch.compile backend (a real compile costs seconds)."""
    try:
        import torch._dynamo  # noqa: F401
        import torch._inductor  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the torch build
        return Support.no(f"torch.compile unavailable: {exc}")
    if device_type == "cuda":
        try:
            import triton  # noqa: F401
        except Exception as exc:
            return Support.no(f"torch.compile on CUDA needs Triton, which does not import: {exc}")
        problem = triton_c_compiler_problem()
        return Support.no(problem) if problem else Support.yes()
    if not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")):
        return Support.no("torch.compile on the CPU needs a C++ compiler (g++/clang++), none found on PATH")
    return Support.yes()


def _te_support(env: Environment) -> None:
    """Fill in TE's version, its recipes and its own FP8 checks (TE decides, not us)."""
    try:
        import transformer_engine
        import transformer_engine.pytorch as te
    except Exception as exc:
        env.te_error = f"{type(exc).__name__}: {exc}".strip()
        reason = f"Transformer Engine is not importable ({env.te_error.splitlines()[0][:200]})"
        env.fp8 = env.fp8_block = env.mxfp8 = env.nvfp4 = Support.no(reason)
        return
    env.te = getattr(transformer_engine, "__version__", "unknown")
    from transformer_engine.common import recipe as te_recipe

    env.te_recipes = [name for name in TE_RECIPE_CLASSES if hasattr(te_recipe, name)]
    env.te_api = [name for name in TE_API if hasattr(te, name)]
    if env.device_type != "cuda":
        reason = "no CUDA device"
        env.fp8 = env.fp8_block = env.mxfp8 = env.nvfp4 = Support.no(reason)
        return
    for attr, fn_name in (
        ("fp8", "is_fp8_available"),
        ("fp8_block", "is_fp8_block_scaling_available"),
        ("mxfp8", "is_mxfp8_available"),
        ("nvfp4", "is_nvfp4_available"),
    ):
        fn = getattr(te, fn_name, None)
        if fn is None:
            setattr(env, attr, Support.no(f"TE {env.te} has no {fn_name}()"))
            continue
        try:
            ok, why = fn(return_reason=True)
        except Exception as exc:
            ok, why = False, f"{fn_name}() raised {type(exc).__name__}: {exc}"
        setattr(env, attr, Support(ok=bool(ok), reason="" if ok else str(why)))


def _torchao_support(env: Environment) -> None:
    """torchao's version from its package metadata, and its float8 recipes where the pair is supported.

    The version is read without importing torchao: a torchao built for another
    torch can abort the process on import (0.13 on torch 2.9), which would take
    the whole probe with it. Only a supported pair is imported.
    """
    from importlib import metadata

    from tebench.plan.torchao_support import pair_problem

    try:
        env.torchao = metadata.version("torchao")
    except metadata.PackageNotFoundError:
        env.torchao_error = "not installed"
        return
    if pair_problem(env.torchao, env.torch or ""):
        return  # the gate says why, from the two versions
    try:
        from torchao.float8.config import Float8LinearRecipeName
    except Exception as exc:
        env.torchao_error = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
        env.torchao = None
        return
    env.torchao_recipes = [r.value for r in Float8LinearRecipeName]


def cpu_matmul_gflops(seconds: float = 0.2) -> float | None:
    """fp32 GFLOP/s of 512x512 matmuls on this CPU for about ``seconds`` (the machine's own rate, load included)."""
    import torch

    a = torch.randn(512, 512)
    b = torch.randn(512, 512)
    torch.mm(a, b)  # first call: thread pool start-up, not counted
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        torch.mm(a, b)
        n += 1
    return 2 * 512**3 * n / elapsed / 1e9 if n else None


def detect() -> Environment:
    """Detect the machine in this process. Initializes CUDA: call it in a child."""
    import torch

    env = Environment(device_type="cpu", tebench=__version__)
    env.torch = torch.__version__
    env.cuda = torch.version.cuda
    env.python = sys.version.split()[0]
    env.platform = platform.platform()
    env.cpu = cpu_model()
    env.cpu_count = os.cpu_count() or 0
    env.hostname = socket.gethostname()
    env.time = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    env.env_vars = {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}
    env.git_commit, env.git_dirty = _git_state()
    env.cpu_gflops = cpu_matmul_gflops()
    if torch.cuda.is_available():
        env.device_type = "cuda"
    # TE first: once torch has loaded its own cuDNN, TE can pick up a second,
    # incompatible cuDNN from the system and fail to import (seen on an H200
    # image with cuDNN both in the torch wheel and in /lib).
    _te_support(env)
    if torch.cuda.is_available():
        env.device_type = "cuda"
        gpus = []
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            gpus.append(GPU(index=i, name=props.name, capability=[props.major, props.minor],
                            memory_bytes=props.total_memory, multiprocessors=props.multi_processor_count))
        env.gpus = gpus
        env.bf16 = bool(torch.cuda.is_bf16_supported())
        try:
            if torch.backends.cudnn.is_available():
                env.cudnn = str(torch.backends.cudnn.version())
        except RuntimeError as exc:
            # Typically TE loaded a system cuDNN older than torch's own; cases
            # still run, but the user should know (docs/guide/install.md: CUDNN_PATH).
            env.cudnn = f"unusable by torch: {str(exc).splitlines()[0][:300]}"
        env.driver, env.gpu_clocks = _nvidia_smi()
        env.peak_tflops = peak_for(gpus[0].name) if gpus else None
    else:
        env.bf16 = True  # CPU autocast is bf16
    env.compile = _compile_support(env.device_type)
    _torchao_support(env)
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401

        env.fsdp2 = Support.yes()
    except ImportError:
        env.fsdp2 = Support.no(f"torch {torch.__version__} has no FSDP2 (torch.distributed.fsdp.fully_shard)")
    return env


def main() -> int:
    """``python -m tebench.plan.environment [--json]``."""
    env = detect()
    if "--json" in sys.argv:
        print(json.dumps(env.to_dict()))
    else:
        print(json.dumps(env.to_dict(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
