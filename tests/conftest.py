"""Shared fixtures. GPU tests are marked ``gpu`` and skip cleanly without CUDA."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def _has_te() -> bool:
    try:
        import transformer_engine.pytorch  # noqa: F401

        return True
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    cuda, te = _has_cuda(), None
    for item in items:
        if "gpu" in item.keywords and not cuda:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
        elif "te" in item.keywords:
            te = _has_te() if te is None else te
            if not te:
                item.add_marker(pytest.mark.skip(reason="needs Transformer Engine"))


def read_jsonl(path: Path) -> list[dict]:
    """Every record of a results file (or any JSON Lines file)."""
    import json

    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Write records as JSON Lines; returns the path."""
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def tebench_cli(tmp_path):
    """Run the tebench CLI in a child process, as a user would; returns CompletedProcess."""
    import subprocess

    def run(*args: str, env: dict | None = None, timeout: float = 600, check: bool = False):
        # Prepend, not replace: a GPU machine may provide TE through PYTHONPATH.
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        full_env = {**os.environ, "PYTHONPATH": path, **(env or {})}
        proc = subprocess.run([sys.executable, "-m", "tebench", *args], capture_output=True, text=True,
                              env=full_env, timeout=timeout, cwd=tmp_path)
        if check and proc.returncode != 0:
            raise AssertionError(f"tebench {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run
