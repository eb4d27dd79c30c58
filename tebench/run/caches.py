"""Compile caches that outlive one case's process, and what state they were in.

Each case runs in a fresh process, so without a persistent cache every
``torch.compile`` case (and every Transformer Engine case: TE's fused
functions are compiled with ``torch.compile``) compiles from scratch. On the
H200, a d2048 PT-AMP+compile case spent 24.1 s warming up with an empty
inductor cache and 3.1 s with a warm one. The caches live in one directory the
user chooses (and CI can keep between jobs); the run header says whether it
started cold or warm, because a cold cache makes the warm-up, not the
measured steps, slower.

What is cached: inductor's FX-graph and AOT-autograd caches and its Triton
kernels, and the CUDA driver's JIT cache for PTX. Transformer Engine and
cuBLAS keep no autotuning results on disk that could be reused (cuBLASLt picks
its algorithms by heuristics in each process), so there is nothing of theirs
to persist.
"""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Mapping
from typing import Any

# Environment variable -> subdirectory of the cache directory.
LAYOUT = {
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TRITON_CACHE_DIR": "triton",
    "CUDA_CACHE_PATH": "cuda-jit",
}
# Switched on explicitly: they are defaults in recent torch releases, but a
# release where one is off would silently make every case compile cold.
SWITCHES = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}


def default_dir() -> Path:
    """``$TEBENCH_CACHE_DIR/compile`` (by default ``~/.cache/tebench/compile``)."""
    from tebench.plan.environment import _cache_dir

    return _cache_dir() / "compile"


def default_source() -> str:
    """Where :func:`default_dir` comes from, in words: the variable that set it, with its value, or the home folder."""
    from tebench.plan.environment import CACHE_ENV

    return next((f"${name}={os.environ[name]}" for name in (CACHE_ENV, "XDG_CACHE_HOME") if os.environ.get(name)),
                "your home folder's .cache")


def child_env(directory: Path | None, parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables that point a case's process at ``directory``.

    A variable the user already set wins: someone who points inductor at their
    own cache keeps it. ``None`` means no cache directory (torch's defaults).
    """
    if directory is None:
        return {}
    env: Mapping[str, str] = os.environ if parent is None else parent
    wanted = {var: str(directory / sub) for var, sub in LAYOUT.items()} | SWITCHES
    return {k: v for k, v in wanted.items() if k not in env}


def _count(directory: Path) -> tuple[int, int]:
    files = size = 0
    for root, _, names in os.walk(directory):
        for name in names:
            files += 1
            try:
                size += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return files, size


def describe(directory: Path | None, parent: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The cache's state before a run: ``warm`` when it already holds compiled entries."""
    if directory is None:
        return {"dir": None, "state": "off"}
    env: Mapping[str, str] = os.environ if parent is None else parent
    overridden = sorted(var for var in LAYOUT if var in env)
    files, size = _count(directory) if directory.is_dir() else (0, 0)
    return {
        "dir": str(directory),
        "state": "warm" if files else "cold",
        "files": files,
        "bytes": size,
        "overridden_by_env": overridden,
    }


def prepare(directory: Path | None) -> None:
    """Create the cache directory (a cache that cannot be created is an error the user should see)."""
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
