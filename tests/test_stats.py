"""Timing statistics, throughput/MFU and the bootstrap used by compare."""

from __future__ import annotations

import numpy as np

from tebench import stats


def test_summary_of_samples():
    s = stats.summarize([1, 2, 3, 4, 100])
    assert s["median"] == 3 and s["min"] == 1 and s["max"] == 100 and s["n"] == 5
    assert s["p25"] == 2 and s["p75"] == 4 and s["iqr"] == 2


def test_mfu_needs_a_known_peak():
    peak = {"bf16": 1000.0, "source": "test"}
    t = stats.throughput(median_ms=10.0, tokens=4096, flops=5e12, peak=peak)
    assert t["tokens_per_s"] == 409600 and abs(t["tflops"] - 500) < 1e-9 and abs(t["mfu"] - 0.5) < 1e-12
    assert stats.throughput(10.0, 4096, 5e12, None)["mfu"] is None
    assert stats.throughput(10.0, 4096, 0.0, peak)["mfu"] is None


def test_bootstrap_detects_a_real_shift_and_not_noise():
    rng = np.random.default_rng(1)
    base = [list(10 + rng.normal(0, 0.3, 50)) for _ in range(2)]
    same = [list(10 + rng.normal(0, 0.3, 50)) for _ in range(2)]
    slower = [list(11 + rng.normal(0, 0.3, 50)) for _ in range(2)]
    point, lo, hi = stats.bootstrap_ratio(base, same, resamples=500)
    assert lo < 1.0 < hi
    point, lo, hi = stats.bootstrap_ratio(base, slower, resamples=500)
    assert 1.07 < point < 1.13 and lo > 1.0
