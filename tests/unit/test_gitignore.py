"""What the documented commands leave in the checkout is ignored by git, so it is never committed by mistake."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import ROOT

LEFT_BY_COMMANDS = [
    "site/index.html",  # mkdocs build (docs/guide/testing.md)
    "examples/custom-workload/runs/tinyreg/results.jsonl",  # the README's custom-workload example
    "runs/main/results.jsonl",  # the README's main command
    "history.db",  # the README's and docs/guide/history.md's `tebench history add runs/main --db history.db`
]


@pytest.mark.parametrize("path", LEFT_BY_COMMANDS)
def test_what_a_documented_command_leaves_is_ignored(path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    done = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=ROOT, timeout=60)
    assert done.returncode == 0, f"{path} is not ignored: add it to .gitignore"
