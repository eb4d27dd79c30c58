"""``python -m tebench`` from a Python without tebench's packages says what to do and exits 2, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from tebench import installed


def test_every_required_package_is_importable_here():
    assert installed.missing() == []


def test_a_missing_package_gets_the_remedy_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(installed, "REQUIRED", ("pandas", "no_such_package_for_tebench"))
    monkeypatch.setattr(installed, "missing", lambda names=None: ["no_such_package_for_tebench"])
    with pytest.raises(SystemExit) as stop:
        installed.require()
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "lacks no_such_package_for_tebench" in err and "activate .venv" in err and "install tebench" in err


def test_python_m_tebench_checks_before_the_cli_imports(tmp_path):
    # -S: no site-packages, as the system python3 of a fresh clone has none of tebench's packages;
    # tebench itself is found in the clone (-m puts the working directory first on the path).
    run = subprocess.run([sys.executable, "-S", "-m", "tebench", "report", "x.jsonl", "--out", str(tmp_path / "o")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and "activate .venv" in run.stderr and "pandas" in run.stderr
