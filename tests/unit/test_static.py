"""Static checks of tebench/: ruff with the rules pyproject.toml selects must find nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing_in_the_package():
    pytest.importorskip("ruff", reason="ruff is in the test extra: bash scripts/bootstrap.sh --test")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "tebench"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing_in_the_typed_modules():
    """The modules [tool.mypy] lists type-check clean (the list only grows: pyproject.toml says why)."""
    pytest.importorskip("mypy", reason="mypy is in the test extra: bash scripts/bootstrap.sh --test")
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
