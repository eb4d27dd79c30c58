"""The equivalence verdict: a held-out loss within a margin of the reference's, the floor, too early to tell."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import unsaid
from tebench.analysis import equivalence, parity
from tebench.schema.records import CaseResult, Validation

V = Validation.from_dict

N = 100
FLOOR = 2.0


def curve(offset: float = 0.0, rate: float = 0.04, start: float = 4.5, noise: float = 0.0, seed: int = 0,
          n: int = N) -> list[float]:
    """A smooth learning curve from ``start`` toward FLOOR + 0.3, shifted by ``offset`` nats."""
    t = np.arange(n)
    rng = np.random.default_rng(seed)
    values = FLOOR + 0.3 + (start - FLOOR - 0.3) * np.exp(-rate * t) + offset * (t > 0) \
        + noise * rng.standard_normal(n)
    return values.tolist()


REF = curve()
SEEDS = [curve(0.02, seed=1), curve(-0.02, seed=2)]
TWINS = [curve(0.002), curve(-0.001)]
"""Twins at the reference's own seed: their gaps (rms 0.0016) are the paired noise floor."""


def judge(losses, floor=FLOOR, reference=REF, replicas=(), twins=TWINS, share=0.01):
    return equivalence.judge(losses, reference, replicas, floor, "PT-AMP", twins=twins, share=share)


def test_equal_curves_pass_with_the_margin_stated_in_nats_and_as_a_share_of_the_loss():
    out = judge(curve(0.01))
    assert out.verdict == "pass", out.reason
    ref_end = out.reference_final
    assert out.margin_nats == pytest.approx(0.01 * ref_end)
    assert out.margin_rel == pytest.approx(0.01) and out.margin_share == 0.01
    assert out.noise_floor_nats == pytest.approx(np.sqrt((0.002 ** 2 + 0.001 ** 2) / 2))
    assert out.noise_paired is True and out.reference_twins == 2
    lo, hi = out.interval
    assert lo < out.abs_diff < hi and hi <= out.margin_nats
    assert unsaid(out.reason, "nats", "1.0% of the reference's final loss", "of the way") == [], out.reason
    assert 0.8 < out.progress < 1.0


@pytest.mark.parametrize("offset,word", [(0.1, "higher"), (-0.1, "lower")])
def test_a_difference_beyond_the_margin_fails_either_way(offset, word):
    """Learning faster than the reference is a difference, not a win: 4% of the loss against a 1% margin."""
    out = judge(curve(offset))
    assert out.verdict == "fail"
    assert unsaid(out.reason, f"loss {word}", "PT-AMP", "0.1") == [], out.reason
    assert out.abs_diff == pytest.approx(offset, abs=1e-9)


def test_a_case_on_the_edge_of_the_margin_is_inconclusive_never_a_pass_or_a_fail():
    """A gap whose interval straddles the margin's edge must not flip from night to night."""
    noisy = [curve(0.02, noise=0.0), curve(-0.02)]
    edge = judge(curve(0.025), twins=noisy, share=0.01)  # margin 4x0.02 = 0.08 nats; interval 0.025 +- 0.04
    assert edge.margin_nats == pytest.approx(0.08)
    assert edge.verdict == "pass", edge.reason
    out = judge(curve(0.07), twins=noisy)
    assert out.verdict == "inconclusive" and unsaid(out.reason, "edge", "margin") == [], out.reason
    assert judge(curve(0.2), twins=noisy).verdict == "fail"


def test_a_wider_noise_floor_widens_the_margin_and_says_so():
    wide = [curve(0.1), curve(-0.1)]
    out = judge(curve(0.05), twins=wide)
    assert out.margin_nats == pytest.approx(equivalence.NOISE_K * 0.1)
    assert unsaid(out.reason, "widened", "noise floor") == [] and "twin" in out.margin_source, out.reason
    assert judge(curve(0.05)).verdict == "fail"  # the same gap against the quiet twins' 1% margin


def test_the_asked_share_sets_the_margin():
    assert judge(curve(0.05), share=0.03).verdict == "pass"
    assert judge(curve(0.05), share=0.01).verdict == "fail"


def test_without_twins_the_unpaired_seed_spread_sets_a_wide_margin():
    """Records from before twins: the spread of other seeds, stated as unpaired."""
    wide = [curve(0.3, seed=1), curve(-0.3, seed=2)]
    out = judge(curve(0.2), replicas=wide, twins=())
    assert out.verdict == "pass", out.reason
    assert out.noise_paired is False and "unpaired" in out.margin_source and "3 seeds" in out.margin_source
    assert out.margin_rel > 0.1  # a pass that certifies little, and says how little


def test_too_early_on_the_curve_is_inconclusive_never_a_pass():
    slow = curve(rate=0.0005)
    out = judge(slow, reference=slow, twins=[curve(0.001, rate=0.0005), curve(-0.001, rate=0.0005)])
    assert out.verdict == "inconclusive"
    assert unsaid(out.reason, "too early", "curve") == [], out.reason


@pytest.mark.parametrize("offset", [0.0, 0.1, -0.1])
def test_a_reference_still_above_the_unigram_entropy_is_too_early_to_judge(offset):
    """Above the unigram entropy the reference has learned token frequencies only: no verdict either way."""
    ref_end = judge(curve()).reference_final
    above = equivalence.judge(curve(offset), REF, (), FLOOR, "PT-AMP", twins=TWINS, unigram=ref_end - 0.01)
    assert above.verdict == "inconclusive"
    assert unsaid(above.reason, "too early", "unigram entropy", f"{ref_end - 0.01:.4g}") == [], above.reason
    assert above.margin_nats == pytest.approx(0.01 * ref_end)  # the power is still stated
    below = equivalence.judge(curve(offset), REF, (), FLOOR, "PT-AMP", twins=TWINS, unigram=ref_end + 0.5)
    assert below.verdict == judge(curve(offset)).verdict == ("pass" if offset == 0.0 else "fail")


def test_parity_takes_the_unigram_entropy_from_the_task():
    """The zipf-markov floor carries the unigram entropy the rule compares with, per vocabulary."""
    from tebench.workloads import zipf_markov

    f = zipf_markov.floor(96)
    assert f.entropy_rate < f.unigram_entropy < f.uniform


def test_a_reference_whose_loss_rose_is_too_early_to_judge():
    rising = [5.0 + 0.01 * i for i in range(N)]
    out = judge(rising, reference=rising, twins=[rising, rising])
    assert out.verdict == "inconclusive" and out.progress < 0


def test_too_short_a_run_is_inconclusive():
    out = judge(curve(n=5), reference=curve(n=5), twins=[curve(n=5), curve(n=5)])
    assert out.verdict == "inconclusive" and "too short" in out.reason


def test_an_early_excursion_that_rejoins_is_a_note_on_a_pass():
    bumped = curve(0.005)
    for i in range(10, 20):
        bumped[i] += 1.0
    out = judge(bumped)
    assert out.verdict == "pass", out.reason
    assert out.excursion.start <= 12 and out.excursion.side == "above"
    assert "early excursion" in out.reason and "rejoined" in out.reason


def test_a_gap_growing_over_the_second_half_is_named():
    t = np.arange(N)
    drifting = (np.asarray(curve()) + 0.045 * np.clip((t - 50) / 50, 0, None)).tolist()
    out = judge(drifting, share=0.03)
    assert out.verdict == "pass", out.reason
    assert unsaid(out.reason, "gap grew", "+0.04") == [] and out.gap_trend_nats > 0, out.reason


def test_a_non_finite_loss_fails():
    bad = curve()
    bad[50] = float("nan")
    assert judge(bad).verdict == "fail"


def test_no_floor_judges_the_curve_alone():
    out = judge(curve(0.01), floor=None)
    assert out.verdict == "pass" and out.progress is None


def test_validation_within_and_beyond_the_margin_and_below_the_floor():
    ok = equivalence.judge_validation(2.51, 2.50, [2.52, 2.49], FLOOR, 0.05, "heldout_loss")
    assert ok.verdict == "pass"
    far = equivalence.judge_validation(2.70, 2.50, [2.52, 2.49], FLOOR, 0.05, "heldout_loss")
    assert far.verdict == "fail"
    leak = equivalence.judge_validation(1.5, 2.50, [], FLOOR, 0.05, "heldout_loss")
    assert leak.verdict == "fail" and "floor" in leak.reason
    # Twins set the held-out value's noise when there are some: the seeds' wider spread is not used.
    paired = equivalence.judge_validation(2.53, 2.50, [2.9, 2.1], FLOOR, 0.025, "heldout_loss", twins=[2.501, 2.499])
    assert paired.verdict == "fail" and paired.tolerance == pytest.approx(0.025)


# --- through parity.attach: the rule a record gets ------------------------------------------------

def _heldout_record(mode, losses, replicas=None, heldout=None, twins=None, task="zipf-markov", **validation):
    dims = {"vocab": 96, "d_model": 8, "heads": 2, "layers": 1, "ffn": 8, "seq": 8, "batch": 2,
            "task": task}
    settings = {"seed": 1, "steps": N, "warmup": 0, "lr": 1e-3, "lr_warmup": 0, "parity_rtol": 0.15,
                "parity_atol": 0.05}
    loss = {"per_step": losses}
    if replicas is not None:
        loss["replicas"] = replicas
    if twins is not None:
        loss["twins"] = twins
    val = {"metric": "heldout_loss", "heldout_loss": heldout if heldout is not None else losses[-1], **validation}
    return CaseResult.from_dict({"case_id": f"gpt/s/{mode}", "status": "ok", "round": 0,
                                 "case": {"workload": "gpt", "size": "s", "mode": mode, "dims": dims,
                                          "settings": settings, "parallel": "single"},
                                 "loss": loss, "validation": val, "updates": {"unchanged": 0}})


def test_attach_uses_the_equivalence_rule_where_the_task_has_a_floor_and_the_reference_twins():
    start = 4.6
    ref = _heldout_record("PT-AMP", curve(start=start), twins=[curve(0.002, start=start), curve(-0.001, start=start)])
    ref.validation.twins = [2.31, 2.30]
    good = _heldout_record("TE-BF16", curve(0.01, start=start))
    leaky = _heldout_record("TE-FP8", curve(-1.5, start=start), causal_kl=0.4)
    layout = _heldout_record("PT-AMP+compile", curve(0.0, start=start), batch_kl=0.2)
    records = [ref, good, leaky, layout]
    parity.attach(records)
    assert ref.parity.verdict == "reference" and unsaid(ref.parity.reason, "2 twin(s)", "seed") == []
    assert good.parity.verdict == "pass" and good.parity.rule == "equivalence", good.parity.reason
    assert leaky.parity.verdict == "fail"
    assert "sees the future" in leaky.parity.reason and "below the task's floor" in leaky.parity.reason
    assert layout.parity.verdict == "fail" and "across the batch" in layout.parity.reason


def test_attach_with_replicas_only_judges_by_the_unpaired_spread():
    start = 4.6
    ref = _heldout_record("PT-AMP", curve(start=start), replicas=[curve(0.02, start=start, seed=1),
                                                          curve(-0.02, start=start, seed=2)])
    good = _heldout_record("TE-BF16", curve(0.01, start=start))
    parity.attach([ref, good])
    assert ref.parity.verdict == "reference" and "2 other seeds" in ref.parity.reason
    assert good.parity.verdict == "pass" and good.parity.noise_paired is False, good.parity.reason


def test_the_parity_margin_setting_is_the_share_asked():
    start = 4.6
    ref = _heldout_record("PT-AMP", curve(start=start), twins=[curve(0.002, start=start), curve(-0.001, start=start)])
    case = _heldout_record("TE-BF16", curve(0.05, start=start))
    case.case = case.case.replace(settings=dataclasses.replace(case.case.settings, parity_margin=0.03))
    parity.attach([ref, case])
    assert case.parity.verdict == "pass" and case.parity.margin_share == 0.03, case.parity.reason


def test_twins_bring_the_equivalence_rule_to_a_loss_without_a_floor():
    """A regression-like loss (here the arithmetic task, which states no floor) judged against twins: the margin is
    1% of its loss in its own units, with no least margin in nats; seeds alone keep the band rule there."""
    low = [0.01 * v for v in curve()]  # ends near 0.023: 1% is 0.00023, far under the 0.005-nat least margin
    ref = _heldout_record("PT-AMP", low, twins=[[v * (1 + 1e-5) for v in low], [v * (1 - 1e-5) for v in low]],
                          task="arithmetic")
    close = _heldout_record("TE-BF16", [v * 1.002 for v in low], task="arithmetic")
    off = _heldout_record("TE-FP8", [v * 1.05 for v in low], task="arithmetic")
    parity.attach([ref, close, off])
    assert close.parity.rule == off.parity.rule == "equivalence"
    assert close.parity.verdict == "pass" and off.parity.verdict == "fail", (close.parity.reason, off.parity.reason)
    assert close.parity.margin_nats == pytest.approx(0.01 * close.parity.reference_final)
    assert close.parity.floor is None and "nats" not in off.parity.reason
    seeds_only = _heldout_record("PT-AMP", low, replicas=[low, low], task="arithmetic")
    case = _heldout_record("TE-BF16", [v * 1.002 for v in low], task="arithmetic")
    parity.attach([seeds_only, case])
    assert case.parity.rule is None


def test_without_reference_seeds_the_band_rule_judges_as_before():
    ref = _heldout_record("PT-AMP", curve())
    case = _heldout_record("TE-BF16", curve(0.01))
    parity.attach([ref, case])
    assert case.parity.rule is None and "band" in case.parity.reason


def test_structure_failure_thresholds():
    assert parity.structure_failure(V({"causal_kl": 0.0, "batch_kl": 1e-6})) is None
    assert "future" in parity.structure_failure(V({"causal_kl": 0.05}))
    assert "batch" in parity.structure_failure(V({"batch_kl": float("nan")}))


def test_context_failure_compares_with_the_least_reference():
    refs = [V({"context_kl": 0.3}), V({"context_kl": 0.2})]
    assert parity.context_failure(V({"context_kl": 0.1}), refs) is None  # half the least reference's
    assert "ignore the tokens before" in parity.context_failure(V({"context_kl": 0.0}), refs)
    assert parity.context_failure(V({"context_kl": 0.04}), refs) is not None  # under a quarter of 0.2
    # A reference that has not learned to use the context yet: no check.
    assert parity.context_failure(V({"context_kl": 0.0}), [V({"context_kl": 0.004})]) is None
    assert parity.context_failure(V({"context_kl": 0.0}), []) is None
    assert parity.context_failure(V({}), refs) is None


def test_structure_bar_depends_on_whether_fp8_was_off():
    # Run without FP8 a correct model reads exactly 0: a thousandth of a nat is a leak.
    assert "future" in parity.structure_failure(V({"causal_kl": 0.002, "structure_fp8": "off"}))
    assert "batch" in parity.structure_failure(V({"batch_kl": 0.0011, "structure_fp8": "none"}))
    assert parity.structure_failure(V({"causal_kl": 0.0, "batch_kl": 0.0, "structure_fp8": "off"})) is None
    # With the case's FP8 (older records, FP8 weights) a per-tensor scale moves them by rounding.
    assert parity.structure_failure(V({"causal_kl": 0.003})) is None
    assert parity.structure_failure(V({"causal_kl": 0.003, "structure_fp8": "on"})) is None


def _spiked(at: int, height: float, n: int = N) -> list[float]:
    """The reference's curve with a spike of ``height`` nats at step ``at`` that decays over ten steps."""
    t = np.arange(n)
    bump = np.where(t >= at, height * np.exp(-(t - at) / 10.0), 0.0)
    return (np.asarray(REF) + bump).tolist()


def test_a_loss_spike_after_the_first_quarter_is_named_with_its_step_and_rise():
    p = judge(_spiked(40, 0.5))
    assert (p.spike_step, round(p.spike_nats, 3)) == (40, 0.5)
    assert "a loss spike at step 40: the gap rose by 0.5 nats in one step" in p.notes
    assert p.verdict == "pass"  # decayed by the final window: the spike is said, the verdict is the window's


def test_no_spike_is_named_in_the_first_quarter_below_two_margins_or_where_the_reference_rises_as_much():
    assert judge(_spiked(10, 0.5)).spike_step is None  # the curves part by design early on
    assert judge(_spiked(40, 0.04)).spike_step is None  # under two margins (±0.0237 each)
    bumpy = _spiked(60, 0.4)  # the reference has a bump of its own, a step later in the case
    assert judge(_spiked(40, 0.5), reference=bumpy, twins=()).spike_step is None


def test_a_spike_stands_out_of_the_gaps_usual_step_moves():
    # A noisy case (sd 0.03 a step): no single rise of 0.12 is a spike however many margins it is.
    noisy = curve(noise=0.03, seed=5)
    assert judge(noisy, share=0.001).spike_step is None


def test_the_stored_h100_night_names_the_spike_that_failed_llama_d4096_ao_fp8_and_not_the_night_before():
    from conftest import ROOT
    from tebench.analysis import judged_run

    found = {}
    for night in ("night1", "night2"):
        run = judged_run.runs_in(ROOT / "reports" / "h100-nightly-87e902b" / f"{night}.jsonl.gz", rejudge=True)[0]
        found[night] = next(r.parity for r in run.cases if r.case_id == "llama/d4096-l4/AO-FP8/tensorwise")
    assert found["night1"].verdict == "pass" and found["night1"].spike_step is None
    assert found["night2"].verdict == "fail" and found["night2"].spike_step == 25
    assert "a loss spike at step 25: the gap rose by 0.458 nats in one step" in found["night2"].reason


def test_a_spike_is_still_found_beside_a_non_finite_twin_and_none_in_a_non_finite_reference():
    twins = [list(TWINS[0]), list(TWINS[1])]
    twins[0][50] = float("nan")
    assert judge(_spiked(40, 0.5), twins=twins).spike_step == 40
    reference = list(REF)
    reference[60] = float("inf")
    assert judge(_spiked(40, 0.5), reference=reference).spike_step is None


def test_a_reference_that_falls_is_no_spike_of_the_case():
    falling = (np.asarray(REF) - np.where(np.arange(N) >= 45, 0.5, 0.0)).tolist()
    twins = [(np.asarray(t) - np.where(np.arange(N) >= 45, 0.5, 0.0)).tolist() for t in TWINS]
    p = judge(REF, reference=falling, twins=twins)
    assert p.verdict == "fail" and p.spike_step is None


def test_a_case_back_from_a_dip_below_the_reference_is_no_spike():
    dipped = list(REF)
    dipped[30] -= 0.5
    assert judge(dipped).spike_step is None
    below = (np.asarray(REF) - np.where((np.arange(N) >= 30) & (np.arange(N) < 50), 0.3, 0.0)).tolist()
    assert judge(below).spike_step is None  # twenty steps below, then rejoined


@pytest.mark.parametrize("seed", range(12))
def test_a_bump_the_reference_has_a_step_earlier_is_no_spike_of_the_case(seed):
    t = np.arange(N)
    rng = np.random.default_rng(seed)
    reference = np.asarray(curve()) + np.where(t == 60, 0.3, 0.0) + 0.01 * rng.standard_normal(N)
    case = np.asarray(curve()) + np.where(t == 61, 0.3, 0.0) + 0.01 * rng.standard_normal(N)
    assert judge(case.tolist(), reference=reference.tolist(), twins=()).spike_step is None


def test_a_short_twin_is_left_out_and_said_and_does_not_shorten_the_window():
    full = judge(curve(0.06))
    assert full.verdict == "fail" and full.final_window == [75, 99]
    short = judge(curve(0.06), twins=[TWINS[0][:40], TWINS[1]])
    assert short.verdict == "fail" and short.final_window == [75, 99] and short.reference_twins == 1
    assert "1 twin(s) or seed(s) of the reference left out: shorter than the run's 100 steps" in short.notes
    assert "its PT-AMP reference's 5; 8 needed" in judge(curve(), reference=REF[:5]).reason
