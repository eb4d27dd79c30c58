"""Shared setup of the pytest-benchmark suites in benchmarks/.

Shapes come from TEBENCH_BENCH_SHAPES ("HIDDENxTOKENS,..."); by default a GPU
gets transformer-sized shapes and a CPU tiny ones, so the suite also runs (PT
only) on a laptop.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU")


@pytest.fixture(scope="session")
def env():
    from tebench.worker.probe import detect

    return detect()


def shapes() -> list[tuple[int, int]]:
    spec = os.environ.get("TEBENCH_BENCH_SHAPES")
    if not spec:
        try:
            import torch

            gpu = torch.cuda.is_available()
        except Exception:
            gpu = False
        spec = "1024x4096,1024x16384,4096x4096,4096x16384" if gpu else "64x256"
    out = []
    for item in spec.split(","):
        hidden, tokens = item.lower().split("x")
        out.append((int(hidden), int(tokens)))
    return out
