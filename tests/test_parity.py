"""Loss parity and divergence judgements."""

from __future__ import annotations

import math

from tebench import parity


def curve(start: float, end: float, n: int = 40, noise: float = 0.0) -> list[float]:
    return [start + (end - start) * i / (n - 1) + (noise * (-1) ** i) for i in range(n)]


def test_same_curve_passes():
    ref = curve(4.5, 0.8)
    out = parity.evaluate(ref, [ref], "PT-FP32", rtol=0.1, atol=0.05)
    assert out["verdict"] == "pass" and abs(out["abs_diff"]) < 1e-12


def test_brief_layout_bug_fails():
    """BRIEF: attention across the batch ended at ~1.85 instead of ~0.83."""
    out = parity.evaluate(curve(4.5, 1.85), [curve(4.5, 0.83)], "PT-FP32", rtol=0.1, atol=0.05)
    assert out["verdict"] == "fail" and out["reason"].startswith("final loss")


def test_small_bf16_drift_passes():
    out = parity.evaluate(curve(4.5, 0.85), [curve(4.5, 0.83)], "PT-FP32", rtol=0.1, atol=0.05)
    assert out["verdict"] == "pass"


def test_noisy_reference_widens_tolerance():
    ref = curve(2.0, 1.0, noise=0.3)
    out = parity.evaluate(curve(2.0, 1.4), [ref], "PT-FP32", rtol=0.05, atol=0.01)
    assert out["tolerance"] >= 3 * 0.3 * 0.9 and out["verdict"] == "pass"


def test_spike_that_recovers_is_visible_on_the_curve():
    ref = curve(4.5, 0.5)
    spiky = list(ref)
    for i in range(15, 22):
        spiky[i] = 8.0
    out = parity.evaluate(spiky, [ref], "PT-FP32", rtol=0.1, atol=0.05)
    assert out["verdict"] == "pass"  # the end agrees...
    assert out["max_curve_rel_dev"] > 0.5 and 13 <= out["max_curve_dev_step"] <= 22  # ...but the spike shows


def test_divergence():
    assert parity.divergence([1.0, 0.9, float("nan")]) == "loss became nan at step 2"
    assert "rose" in parity.divergence(curve(1.0, 5.0))
    assert parity.divergence(curve(4.0, 1.0)) is None
    assert "inf" in parity.divergence([1.0, math.inf])


def test_no_reference_is_not_a_pass():
    assert parity.evaluate([1.0, 0.5], [], "PT-FP32", 0.1, 0.05)["verdict"] == "n/a"


def _record(mode: str, losses: list[float], status: str = "ok", graphs: bool = False) -> dict:
    return {
        "status": status,
        "case": {"workload": "gpt", "size": "s", "mode": mode, "dims": {"d": 1}, "graphs": graphs,
                 "parallel": "single",
                 "settings": {"seed": 1, "steps": 30, "warmup": 10, "lr": 1e-3, "parity_rtol": 0.1,
                              "parity_atol": 0.05}},
        "loss": {"per_step": losses},
    }


def test_reference_falls_back_to_pt_amp_and_judges_others():
    records = [_record("PT-FP32", curve(4, 1), status="oom"), _record("PT-AMP", curve(4, 1)),
               _record("TE-FP8", curve(4, 2))]
    parity.attach(records)
    assert records[1]["parity"]["verdict"] == "reference"
    assert records[2]["parity"]["verdict"] == "fail"
    assert records[2]["parity"]["reference_mode"] == "PT-AMP"


def test_graphed_reference_is_judged_not_used_as_reference():
    records = [_record("PT-FP32", curve(4, 1)), _record("PT-FP32", curve(4, 1.02), graphs=True)]
    parity.attach(records)
    assert records[1]["parity"]["verdict"] == "pass"
    assert records[1]["parity"]["reference_mode"] == "PT-FP32"
