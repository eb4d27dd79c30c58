"""Synthetic nightly runs for the history's tests: the CPU fixture again and again, one step time changed."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np

from conftest import FIXTURES

CPU = FIXTURES / "cpu-smoke.jsonl"


def nightly(tmp_path: Path, n: int, slow_from: int | None = None, factor: float = 1.3) -> list[Path]:
    """n synthetic nightly runs from the fixture; from run ``slow_from`` on, gpt/tiny/PT-AMP is slower."""
    base = [json.loads(line) for line in CPU.read_text().splitlines()]
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        records = copy.deepcopy(base)
        run_id = f"night-{i:02d}"
        for r in records:
            r["run_id"] = run_id
            if r["type"] == "header":
                r["created"] = f"2026-11-{i + 1:02d}T02:00:00+0000"
            if r.get("timing"):
                f = factor if (slow_from is not None and i >= slow_from and r["case_id"] == "gpt/tiny/PT-AMP") else 1.0
                jitter = 1 + rng.normal(0, 0.01)
                r["timing"]["samples_ms"] = [s * f * jitter for s in r["timing"]["samples_ms"]]
                r["timing"]["stats"]["median"] = float(np.median(r["timing"]["samples_ms"]))
        path = tmp_path / f"{run_id}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        paths.append(path)
    return paths
