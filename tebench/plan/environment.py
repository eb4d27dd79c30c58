"""Probing the machine: the probe's answer (:class:`~tebench.schema.environment.Environment`), cached per machine.

The probe itself runs in a child, ``python -m tebench.worker.probe``: the parent
never touches CUDA. :func:`probe` starts it and caches its answer per
:func:`machine_key`; gates, the header and ``tebench env`` read the answer.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping

from tebench import bounded
from tebench import __version__
from tebench.errors import TebenchError
from tebench.schema.environment import Environment


# Environment variables that change what TE or CUDA does; recorded so that a
# surprising number can be traced back to a setting.
ENV_PREFIXES = ("NVTE_", "CUDA_", "CUBLAS", "CUDNN_", "NCCL_", "TORCH_", "PYTORCH_", "TORCHINDUCTOR_")

# TE recipe classes by the names TE 2.x uses; a release lacking one reports it
# as unavailable instead of failing at run time.
TE_RECIPE_CLASSES = (
    "DelayedScaling",
    "Float8CurrentScaling",
    "Float8BlockScaling",
    "MXFP8BlockScaling",
    "NVFP4BlockScaling",
)

# The TE entry points tebench uses, old and new names (TE 2.x renamed
# fp8_autocast -> autocast and fp8_model_init -> quantized_model_init).
TE_API = ("autocast", "fp8_autocast", "quantized_model_init", "fp8_model_init", "make_graphed_callables")


def cpu_model() -> str:
    """This machine's CPU model as /proc/cpuinfo names it, else what the platform module says."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return match.group(1).strip() if match else platform.machine()


def _git_state(environ: Mapping[str, str] | None = None) -> tuple[str | None, bool | None]:
    """The commit of the tebench checkout this code runs from, if it is one."""
    environ = os.environ if environ is None else environ
    if environ.get("TEBENCH_GIT_COMMIT"):
        return environ["TEBENCH_GIT_COMMIT"], None
    root = Path(__file__).resolve().parents[2]  # the checkout, where tebench runs from one
    if not (root / ".git").exists() or not shutil.which("git"):
        return None, None
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--verify", "-q", "HEAD"], capture_output=True, text=True, timeout=10
        )
        commit = proc.stdout.strip() if proc.returncode == 0 else None
        dirty = bool(
            subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True, text=True, timeout=10,
            ).stdout.strip()
        )
        return commit, dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


class ProbeError(TebenchError, RuntimeError):
    """Hardware detection itself failed (the child crashed or printed no answer)."""


CACHE_ENV = "TEBENCH_CACHE_DIR"
"""Where probe answers are cached (default: $XDG_CACHE_HOME/tebench or ~/.cache/tebench)."""

# Fields that describe this invocation rather than the machine: recomputed
# when a cached answer is reused.
_VOLATILE = ("time", "env_vars", "git_commit", "git_dirty", "hostname")


def _cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV])
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tebench"


def _package_stamp(name: str) -> str:
    """Where a package is installed and when it was written, without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return "absent"
    if spec is None or not spec.origin:
        return "absent"
    try:
        return f"{spec.origin}@{os.stat(spec.origin).st_mtime_ns}"
    except OSError:
        return spec.origin


def _driver_stamp() -> str:
    """The NVIDIA kernel driver's version line and the device nodes, read from the file system."""
    try:
        version = Path("/proc/driver/nvidia/version").read_text().splitlines()[0]
    except (OSError, IndexError):
        version = "no NVIDIA driver"
    try:
        nodes = sorted(p.name for p in Path("/dev").glob("nvidia[0-9]*"))
    except OSError:
        nodes = []
    return f"{version} {' '.join(nodes)}"


def machine_key(python: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """Identity of what a probe would find: host, Python, torch/TE/torchao installs, driver, CUDA/TE env
    vars, compilers.

    Any change to one of these (a driver update, a new torch, another
    CUDA_VISIBLE_DEVICES) gives a new key, so a cached answer is never stale. ``environ``: the
    variables the probe runs with (default: this process's).
    """
    environ = os.environ if environ is None else environ
    exe = python or sys.executable
    try:
        exe_stamp = f"{os.path.realpath(exe)}@{os.stat(exe).st_mtime_ns}"
    except OSError:
        exe_stamp = exe
    parts = {
        "host": socket.gethostname(),
        "python": exe_stamp,
        "tebench": f"{__version__}@{os.stat(__file__).st_mtime_ns}",
        "torch": _package_stamp("torch"),
        "te": _package_stamp("transformer_engine"),
        "torchao": _package_stamp("torchao"),
        "driver": _driver_stamp(),
        "env": {k: v for k, v in sorted(environ.items()) if k.startswith(ENV_PREFIXES)},
        # The compile gate's compilers: fixing CC or installing gcc must not leave a cached "no compiler".
        "compilers": [environ.get("CC")] + [shutil.which(c) for c in ("gcc", "clang", "g++", "c++", "clang++")],
    }
    import hashlib

    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def _refresh(env: Environment, environ: Mapping[str, str] | None = None) -> Environment:
    environ = os.environ if environ is None else environ
    env.time = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    env.env_vars = {k: v for k, v in sorted(environ.items()) if k.startswith(ENV_PREFIXES)}
    env.hostname = socket.gethostname()
    env.git_commit, env.git_dirty = _git_state(environ)
    return env


_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The directory holding this tebench package (tebench/plan/environment.py is three levels down)."""


def _run_probe(timeout: float, python: str | None,
               environ: Mapping[str, str] | None = None) -> tuple[Environment, bool]:
    """Detection in a child process run with ``environ`` (None: this process's); (environment, whether the
    answer is complete)."""
    cmd = [python or sys.executable, "-m", "tebench.worker.probe", "--json"]
    # `python -m` puts the working directory first on the import path: a folder named tebench there
    # would be imported instead. This interpreter's probe runs from the root of this tebench; another
    # interpreter's (ab's sides, which set PYTHONPATH to their tebench) from the file system root.
    cwd = _PACKAGE_ROOT if python is None else os.path.abspath(os.sep)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env=None if environ is None else dict(environ))
    except subprocess.TimeoutExpired:
        env = Environment(device_type="cpu", tebench=__version__)
        env.te_error = f"detection timed out after {timeout:.0f} s"
        return env, False
    except OSError as exc:
        raise ProbeError(f"hardware detection could not start {cmd[0]}: {exc}") from None
    if proc.returncode != 0:
        # The child's last line says why (e.g. "ModuleNotFoundError: No module named 'torch'");
        # its whole traceback is one command away, not printed as if tebench had crashed.
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        why = lines[-1].strip() if lines else f"exit {proc.returncode}"
        raise ProbeError(f"hardware detection in a child process failed: {why} "
                         f"(details: {cmd[0]} -m tebench.worker.probe)")
    try:
        return Environment.from_dict(json.loads(proc.stdout.strip().splitlines()[-1])), True
    except (ValueError, IndexError, TypeError, KeyError) as exc:
        said = f":\n{proc.stdout[-500:]}" if proc.stdout.strip() else " (it printed nothing)"
        raise ProbeError(f"hardware detection with {cmd[0]} printed no usable answer; is it a Python with "
                         f"tebench's dependencies? ({type(exc).__name__}: {exc}){said}") from None


def probe(timeout: float = 180.0, python: str | None = None, cached: bool = False,
          extra_env: Mapping[str, str] | None = None) -> Environment:
    """Run detection in a child process and return what it found.

    A child keeps CUDA (and torch) out of the caller; if the child itself
    crashes (a broken driver, say), ProbeError says so. The answer is cached
    per :func:`machine_key`; ``cached=True`` reuses it (``tebench list``: a
    second instead of a torch import), a plain call always probes afresh and
    refreshes the cache (``tebench run`` records what it ran on).

    ``extra_env``: variables the child runs with on top of this process's (a side of ``tebench ab``: its
    PYTHONPATH, ``NVTE_*``, ``CUDA_VISIBLE_DEVICES``); the cache key and the recorded ``env_vars`` see them
    too, and this process's own environment is left as it is.
    """
    environ = None if extra_env is None else {**os.environ, **extra_env}
    key = machine_key(python, environ)
    cache = _cache_dir(environ) / f"env-{key}.json"
    if cached:
        try:
            raw = bounded.read_bytes(cache, "cached probe answer", bounded.PROBE_CACHE_MAX_BYTES)
            return _refresh(Environment.from_dict(json.loads(raw)), environ)
        except (OSError, ValueError, TypeError, KeyError, AttributeError, bounded.InputError):
            pass  # no usable cached answer (missing, damaged, too large, not a regular file): probe
    env, complete = _run_probe(timeout, python, environ)
    if complete:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(env.to_dict()))
            os.replace(tmp, cache)
        except OSError:
            pass  # a read-only home only costs the next call a probe
    return env
