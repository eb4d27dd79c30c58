"""reports/ stays evidence, not an archive: its tracked files together stay under 20 MB.

A stored run is kept as ``*.jsonl.gz`` (tebench reads it as the text it holds); logs and superseded
runs live in git history. reports/README.md says where each finding's data is.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import ROOT

LIMIT_BYTES = 20 * 10**6


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    done = subprocess.run(["git", "ls-files", "-z", "reports"], cwd=ROOT, capture_output=True, timeout=60)
    if done.returncode != 0:
        pytest.skip("git ls-files failed here")
    return [p for p in done.stdout.decode().split("\0") if p]


def test_tracked_reports_stay_under_20_mb():
    sizes = {p: (ROOT / p).stat().st_size for p in _tracked() if (ROOT / p).is_file()}
    total = sum(sizes.values())
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    assert total < LIMIT_BYTES, f"reports/ holds {total / 1e6:.1f} MB; largest: {largest}"


def test_no_stored_run_is_kept_uncompressed_above_a_megabyte():
    big = [p for p in _tracked() if p.endswith(".jsonl") and (ROOT / p).stat().st_size > 10**6
           and p != "reports/h200-nightly-energy/results.jsonl"]  # the showcase the report tests read as text
    assert not big, f"compress them (gzip -9n; tebench reads *.jsonl.gz): {big}"
