"""Convergence verdicts: the rules of tebench.analysis.parity on synthetic curves with known properties."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers.loss_records import loss_record
from tebench.analysis import parity
from tebench.schema.records import Parity, Validation


def curve(start: float, end: float, n: int = 60, noise: float = 0.0, seed: int = 0) -> list[float]:
    """Exponential decay from ``start`` to ``end`` with optional multiplicative noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / (n - 1)
    base = start * (end / start) ** t
    return (base * np.exp(noise * rng.standard_normal(n))).tolist()


def judge(case, ref, **kw):
    return parity.evaluate(case, [ref] if ref and isinstance(ref[0], float) else ref, "PT-FP32",
                           rtol=kw.pop("rtol", 0.1), atol=kw.pop("atol", 0.05), **kw)


def test_identical_curves_pass():
    ref = curve(4.5, 0.8, noise=0.02)
    out = judge(ref, ref)
    assert out.verdict == "pass" and abs(out.abs_diff) < 1e-12
    assert out.reason.startswith("loss curve inside")


def test_brief_layout_bug_fails():
    """BRIEF: attention across the batch ended at ~1.85 instead of ~0.83."""
    out = judge(curve(4.5, 1.85), curve(4.5, 0.83))
    assert out.verdict == "fail" and "above" in out.reason


def test_small_bf16_drift_passes():
    assert judge(curve(4.5, 0.85), curve(4.5, 0.83)).verdict == "pass"


def test_learning_much_faster_than_the_reference_fails():
    out = judge(curve(4.5, 0.2), curve(4.5, 0.8))
    assert out.verdict == "fail" and "below" in out.reason and out.direction == "lower"


def test_no_causal_mask_near_zero_loss_fails_despite_the_absolute_floor():
    """H200: no causal mask ended at 0.0014 against 0.027; atol 0.05 used to hide it."""
    ref = curve(4.5, 0.027, n=150)
    cheat = curve(4.5, 0.0014, n=150)
    out = judge(cheat, ref, atol=0.05)
    assert out.verdict == "fail"
    assert out.floor <= 0.1 * out.reference_final + 1e-12 < 0.05


def test_reference_that_did_not_learn_is_inconclusive():
    """nightly d4096: the reference went 5.34 -> 9.61 -> 5.47 in 16 steps."""
    ref = [5.34, 9.61, 9.2, 8.4, 7.6, 7.0, 6.6, 6.3, 6.1, 5.9, 5.8, 5.7, 5.6, 5.55, 5.5, 5.47]
    out = judge(curve(5.34, 4.0, n=16), ref)
    assert out.verdict == "inconclusive" and "did not learn" in out.reason


def test_too_short_run_is_inconclusive():
    out = judge(curve(4.0, 1.0, n=5), curve(4.0, 1.0, n=5))
    assert out.verdict == "inconclusive" and "too short" in out.reason


def test_reference_too_noisy_to_judge_is_inconclusive():
    ref = curve(4.0, 1.0, n=60, noise=0.02)
    wild = curve(4.0, 1.0, n=60, noise=0.02, seed=3)
    amp = [v * (2.5 if i > 30 else 1.0) for i, v in enumerate(wild)]
    out = judge(ref, ref, companions=[amp])
    assert out.verdict == "inconclusive" and "too wide" in out.reason


def test_sustained_spike_that_recovers_fails_and_says_where():
    ref = curve(4.5, 0.5)
    spiky = list(ref)
    for i in range(15, 25):
        spiky[i] *= 2.0
    out = judge(spiky, ref)
    assert out.verdict == "fail" and out.excursion.side == "above"
    assert 12 <= out.excursion.start <= 18 and 15 <= out.excursion.peak_step <= 25


def test_single_step_blip_is_not_a_failure():
    ref = curve(4.5, 0.5, n=150)
    blip = list(ref)
    blip[70] *= 1.5
    assert judge(blip, ref).verdict == "pass"


def test_pt_amp_distance_from_fp32_widens_the_band():
    ref = curve(4.5, 0.5)
    amp = [v * 1.25 for v in ref]
    case = [v * 1.3 for v in ref]
    assert judge(case, ref).verdict == "fail"
    out = judge(case, ref, companions=[amp])
    assert out.verdict == "pass" and "PT-AMP vs PT-FP32" in out.noise


def test_a_shift_in_when_a_steep_drop_happens_is_tolerated():
    n = 150
    drop = lambda at: [4.5 if i < at else 0.05 + 4.45 * math.exp(-(i - at) / 3) for i in range(n)]  # noqa: E731
    assert judge(drop(52), drop(50)).verdict == "pass"
    assert judge(drop(25), drop(50)).verdict == "fail"


def test_band_is_stored_for_charts():
    out = judge(curve(4.5, 0.8, n=500), curve(4.5, 0.8, n=500))
    band = out.band
    assert band is not None and band.step and band.lo and band.hi and band.center
    assert len(band.step) <= parity.BAND_POINTS and band.step[-1] == 499
    assert all(lo <= c <= hi for lo, c, hi in zip(band.lo, band.center, band.hi))


def test_divergence():
    said = parity.divergence([1.0, 0.9, float("nan")])
    assert said is not None and "nan" in said and "step 2" in said, said
    assert "rose" in parity.divergence(curve(1.0, 5.0))
    assert parity.divergence(curve(4.0, 1.0)) is None
    assert "inf" in parity.divergence([1.0, math.inf])


def test_non_finite_case_fails_and_no_reference_is_not_a_pass():
    assert judge([1.0, float("nan")] * 10, curve(4, 1, n=20)).verdict == "fail"
    assert parity.evaluate([1.0, 0.5], [], "PT-FP32", 0.1, 0.05).verdict == "n/a"


# --- validation judged against the reference -------------------------------------------------------

def acc(value: float, count: int = 16) -> Validation:
    return Validation.from_dict({"metric": "greedy_accuracy", "kind": "accuracy", "count": count,
                                 "greedy_accuracy": value})


def test_greedy_accuracy_far_from_the_reference_fails():
    """H200: no causal mask reached greedy accuracy 0.57 against the reference's 1.0."""
    out = parity.judge_validation(acc(0.57), [acc(1.0)], [], 0.1)
    assert out.verdict == "fail" and out.tolerance < 0.43


def test_greedy_accuracy_within_tolerance_passes():
    assert parity.judge_validation(acc(0.97), [acc(1.0)], [], 0.1).verdict == "pass"


def test_accuracy_of_a_reference_that_has_not_learned_the_task_is_inconclusive():
    assert parity.judge_validation(acc(0.03), [acc(0.04)], [], 0.1).verdict == "inconclusive"


def test_loss_like_validation_uses_the_loss_band():
    mse = lambda v: Validation.from_dict({"metric": "heldout_mse", "kind": "loss", "heldout_mse": v})  # noqa: E731
    assert parity.judge_validation(mse(0.14), [mse(0.13)], [], 0.10).verdict == "pass"
    assert parity.judge_validation(mse(0.30), [mse(0.13)], [], 0.10).verdict == "fail"


def test_old_records_without_a_kind_are_still_judged():
    old = Validation.from_dict({"metric": "greedy_accuracy", "greedy_accuracy": 0.5})
    ref = Validation.from_dict({"metric": "greedy_accuracy", "greedy_accuracy": 1.0})
    assert parity.judge_validation(old, [ref], [], 0.1).verdict == "fail"


# --- verdicts over records -----------------------------------------------------------------------

def test_reference_falls_back_to_pt_amp_and_judges_others():
    records = [loss_record("PT-FP32", curve(4, 1), status="oom"), loss_record("PT-AMP", curve(4, 1)),
               loss_record("TE-FP8", curve(4, 2))]
    parity.attach(records)
    assert records[1].parity.verdict == "reference"
    assert "reference learned" in records[1].parity.reason
    assert records[2].parity.verdict == "fail"
    assert records[2].parity.reference_mode == "PT-AMP"


def test_graphed_reference_is_judged_not_used_as_reference():
    records = [loss_record("PT-FP32", curve(4, 1)), loss_record("PT-FP32", curve(4, 1.02), graphs=True)]
    parity.attach(records)
    assert records[1].parity.verdict == "pass"
    assert records[1].parity.reference_mode == "PT-FP32"


def test_a_and_a_rounds_of_the_reference_pass():
    records = [loss_record("PT-FP32", curve(4, 1, noise=0.02, seed=1)),
               loss_record("PT-FP32", curve(4, 1, noise=0.02, seed=2), round_=1)]
    parity.attach(records)
    assert [r.parity.verdict for r in records] == ["reference", "pass"]


def test_validation_failure_fails_a_case_whose_curve_passes():
    records = [loss_record("PT-FP32", curve(4, 0.03, n=150), validation=acc(1.0)),
               loss_record("TE-BF16", curve(4, 0.03, n=150), validation=acc(0.57))]
    parity.attach(records)
    out = records[1].parity
    assert out.verdict == "fail" and "validation" in out.reason
    assert out.validation.verdict == "fail"


def test_mutated_runs_are_never_references_or_noise():
    ref, bad = curve(4, 1), curve(4, 0.1)
    records = [loss_record("PT-FP32", ref), loss_record("PT-AMP", bad, mutation="lr-x10: ..."),
               loss_record("TE-BF16", curve(4, 1.02))]
    parity.attach(records)
    assert records[1].parity.verdict == "fail"
    assert "PT-AMP vs PT-FP32" not in records[2].parity.noise


@pytest.mark.parametrize("verdict,is_pass", [("pass", True), ("inconclusive", False), ("fail", False),
                                             ("reference", False), ("n/a", False)])
def test_only_pass_is_a_pass(verdict, is_pass):
    assert Parity(verdict=verdict).passed is is_pass
    assert (verdict in parity.JUDGED) is (verdict in ("pass", "fail", "inconclusive"))


def test_one_process_data_parallel_cases_are_judged_and_larger_ones_are_not():
    # One process trains on the reference's batches, so its curve can pass or fail; with two the
    # global batch doubles and only the replica check applies.
    records = [loss_record("PT-AMP", curve(4, 1))]
    for parallel, nproc, scale in (("ddp", 1, 1.02), ("fsdp2", 1, 2), ("ddp", 2, 1)):
        records.append(loss_record("PT-AMP", curve(4, scale), parallel=parallel, nproc=nproc))
    parity.attach(records)
    assert [r.parity.verdict for r in records] == ["reference", "pass", "fail", "n/a"]
    assert "global batch" in records[3].parity.reason
