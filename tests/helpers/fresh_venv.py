"""A fresh venv that sees nothing of this one's: the reporting box (tests/e2e/test_reporting_box.py) and
the oldest supported pydantic (tests/e2e/test_pydantic_floor.py) are built in one.

Where pip cannot reach a package index a test skips (:func:`unreachable`), saying so; with ``CI=true``
it fails instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PIP_TIMEOUT = 600


class Box:
    """The venv: its Python, its ``tebench`` script, and an environment that sees nothing of this one's."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.python = where / "venv" / "bin" / "python"
        self.tebench = where / "venv" / "bin" / "tebench"
        self.cwd = where / "cwd"  # not the clone: `python -m tebench` must find the installed package
        self.cwd.mkdir(parents=True, exist_ok=True)
        drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH"}
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env["PATH"] = os.pathsep.join([str(self.python.parent), env.get("PATH", "")])
        env["PYTHONNOUSERSITE"] = "1"
        env["TEBENCH_CACHE_DIR"] = str(where / "cache")  # a probe's answer, if any, stays here
        self.env = env

    def run(self, *args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                              cwd=self.cwd, env=self.env)

    def pip(self, *args: str | Path) -> subprocess.CompletedProcess:
        return self.run(self.python, "-m", "pip", "install", *args, timeout=PIP_TIMEOUT)

    def imports(self, module: str) -> bool:
        return self.run(self.python, "-c", f"import {module}").returncode == 0


def unreachable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {reason}")
    pytest.skip(reason)


def check_ok(proc: subprocess.CompletedProcess, what: str) -> None:
    assert proc.returncode == 0, f"{what}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def make(where: Path) -> Box:
    """A venv made by the base interpreter under ``where`` (no --system-site-packages)."""
    b = Box(where)
    check_ok(subprocess.run([sys.executable, "-m", "venv", str(b.python.parent.parent)], capture_output=True,
                            text=True, timeout=300, env=b.env), "python -m venv")
    return b


def reach_index(b: Box, requirement: str) -> None:
    """Skip (fail under CI=true) unless pip can download ``requirement``: asked once, briefly."""
    probe = b.run(b.python, "-m", "pip", "download", "--no-deps", "--retries", "1", "--timeout", "30",
                  "-d", b.where / "probe", requirement, timeout=PIP_TIMEOUT)
    if probe.returncode != 0:
        unreachable(f"pip cannot reach a package index: {(probe.stderr.strip().splitlines() or ['?'])[-1]}")
