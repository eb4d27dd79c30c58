"""The report's headline marks a lead within noise, and a CPU report says what a CPU run can tell."""

from __future__ import annotations

import pandas as pd

from conftest import FIXTURES
from tebench.report import render, tables


def _row(variant: str, median: float, iqr: float, speedup: float) -> pd.Series:
    return pd.Series({"variant": variant, "median_ms": median, "iqr_ms": iqr, "speedup_vs_amp": speedup})


def test_a_lead_smaller_than_the_spread_is_within_noise():
    amp = _row("PT-AMP", 40.0, 2.0, 1.0)
    assert tables.within_noise(_row("PT-FP32", 18.0, 47.0, 2.22), amp) == "within noise"  # IQR > the median
    assert tables.within_noise(_row("PT-FP32", 20.0, 0.5, 2.0), amp) == ""
    assert tables.within_noise(amp, amp) == ""  # the baseline itself leads nothing


def test_a_cpu_report_says_what_it_can_tell_and_a_gpu_report_does_not(tmp_path):
    cpu = (render([FIXTURES / "cpu-smoke.jsonl"], tmp_path / "cpu") / "report.md").read_text()
    assert "A CPU run." in cpu.split("**Loss parity")[0] and "h200-nightly" in cpu
    gpu = (render([FIXTURES / "h200-crossover.jsonl"], tmp_path / "gpu") / "report.md").read_text()
    assert "A CPU run." not in gpu
