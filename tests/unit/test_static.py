"""Static checks: ruff with the rules pyproject.toml selects finds nothing in tebench/, tests/ and benchmarks/,
and mypy finds nothing in tebench/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("tree", ["tebench", "tests", "benchmarks"])
def test_ruff_finds_nothing(tree):
    """The tests and the benchmarks are held to the package's rules: a bug there (B023) hides a bug here."""
    pytest.importorskip("ruff", reason="ruff is in the test extra: bash scripts/bootstrap.sh --test")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", tree], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All checks passed" in done.stdout, done.stdout  # it checked, and ran from the right folder


def test_mypy_finds_nothing_in_the_package():
    """All of tebench/ type-checks clean ([tool.mypy] files is the whole package)."""
    pytest.importorskip("mypy", reason="mypy is in the test extra: bash scripts/bootstrap.sh --test")
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    modules = len(list((ROOT / "tebench").rglob("*.py")))
    assert f"no issues found in {modules} source files" in done.stdout, done.stdout  # every module, none left out


def test_mypy_refuses_a_misspelt_or_mistyped_record_field(tmp_path):
    """A part's constructor is typed for mypy: a renamed field fails the check, not a nightly run.

    At run time ``extra="allow"`` keeps an unknown key (a newer tebench's field), so only the checker
    can tell a misspelt keyword from a new one.
    """
    pytest.importorskip("mypy", reason="mypy is in the test extra: bash scripts/bootstrap.sh --test")
    probe = tmp_path / "probe.py"
    probe.write_text("from tebench.schema.records import Loss, Timing\n"
                     "Loss(per_stepp=[1.0])\n"
                     "Timing(samples_ms='fast')\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--config-file", "pyproject.toml",
                           str(probe)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert 'Unexpected keyword argument "per_stepp" for "Loss"' in done.stdout, done.stdout + done.stderr
    assert 'Argument "samples_ms" to "Timing" has incompatible type "str"' in done.stdout, done.stdout
