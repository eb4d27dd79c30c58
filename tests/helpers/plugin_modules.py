"""Workload plugins written for one test: a module on the import path for that test only."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


def write_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> Path:
    """Write ``body`` as module ``name`` under ``tmp_path`` and put that folder on sys.path; returns the file."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return path
