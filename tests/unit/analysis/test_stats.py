"""Timing statistics, throughput/MFU and the round-level tests used by compare and history.

The gate's error rates are checked on synthetic samples with known properties
(AR(1) step noise, per-round offsets, a known shift), never on timed runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tebench.analysis import stats
from tebench.schema.environment import PeakRates
from tebench.schema.records import Summary, Throughput


def test_summary_of_samples():
    s = Summary.of([1, 2, 3, 4, 100])
    assert s.median == 3 and s.min == 1 and s.max == 100 and s.n == 5
    assert s.p25 == 2 and s.p75 == 4 and s.iqr == 2


def test_mfu_needs_a_known_peak():
    peak = PeakRates(match="test", bf16=1000.0, fp32=1.0, source="test")
    t = Throughput.of(median_ms=10.0, tokens=4096, flops=5e12, peak=peak)
    assert t.tokens_per_s == 409600 and abs(t.tflops - 500) < 1e-9 and abs(t.mfu - 0.5) < 1e-12
    assert Throughput.of(10.0, 4096, 5e12, None).mfu is None
    assert Throughput.of(10.0, 4096, 0.0, peak).mfu is None


# --- what is stored: the parts write the objects the runner always wrote, key for key, in order ---------


def _summary_as_stored_before(samples):
    """The object ``summarize`` returned before it returned a Summary (what results files hold)."""
    a = np.asarray(samples, dtype=float)
    if a.size == 0:
        return {"n": 0}
    p10, p25, p50, p75, p90 = np.percentile(a, [10, 25, 50, 75, 90])
    return {"n": int(a.size), "median": float(p50), "mean": float(a.mean()),
            "stdev": float(a.std(ddof=1)) if a.size > 1 else 0.0, "min": float(a.min()), "max": float(a.max()),
            "p10": float(p10), "p25": float(p25), "p75": float(p75), "p90": float(p90), "iqr": float(p75 - p25),
            "iqr_rel": float((p75 - p25) / p50) if p50 else None}


def _throughput_as_stored_before(median_ms, tokens, flops, peak, nproc=1):
    """The object ``throughput`` returned before it returned a Throughput."""
    seconds = median_ms / 1000.0
    tflops = flops / seconds / 1e12 if seconds > 0 and flops > 0 else None
    peak_bf16 = peak.bf16 if peak else None
    mfu = tflops / (peak_bf16 * nproc) if (tflops is not None and peak_bf16) else None
    return {"tokens_per_step": tokens, "tokens_per_s": tokens / seconds if seconds > 0 else None,
            "flops_per_step": flops, "tflops": tflops, "mfu": mfu,
            "mfu_basis": (f"dense BF16 peak {peak_bf16} TFLOP/s x {nproc} GPU(s) ({peak.source})"
                          if mfu and peak else None)}


@pytest.mark.parametrize("samples", [[], [5.0], [1, 2, 3, 4, 100], [0.0, 0.0, 0.0], [2.5, 1.25, 9.0, 3.0]])
def test_summary_writes_the_object_stored_before(samples):
    """Same keys, same order, same values (a null iqr_rel and the lone n of no samples included)."""
    written = Summary.of(samples).to_dict()
    assert list(written.items()) == list(_summary_as_stored_before(samples).items())


def _peak(bf16, source="test"):
    return PeakRates(match="test", bf16=bf16, fp32=1.0, source=source)


@pytest.mark.parametrize("args", [(10.0, 4096, 5e12, _peak(1000.0), 1), (10.0, 4096, 5e12, _peak(989.0, "datasheet"), 4),
                                  (10.0, 4096, 5e12, None, 1), (10.0, 4096, 0.0, _peak(1.0), 1),
                                  (0.0, 4096, 5e12, _peak(1.0), 1)])
def test_throughput_writes_the_object_stored_before(args):
    """Same keys, same order, same values, its nulls included."""
    written = Throughput.of(*args).to_dict()
    assert list(written.items()) == list(_throughput_as_stored_before(*args).items())


def test_bootstrap_detects_a_real_shift_and_not_noise():
    rng = np.random.default_rng(1)
    base = [list(10 + rng.normal(0, 0.3, 50)) for _ in range(2)]
    same = [list(10 + rng.normal(0, 0.3, 50)) for _ in range(2)]
    slower = [list(11 + rng.normal(0, 0.3, 50)) for _ in range(2)]
    point, lo, hi = stats.bootstrap_ratio(base, same, resamples=500)
    assert lo < 1.0 < hi
    point, lo, hi = stats.bootstrap_ratio(base, slower, resamples=500)
    assert 1.07 < point < 1.13 and lo > 1.0


def test_t_distribution_matches_tables():
    # Student's t critical values from any table.
    assert stats.t_quantile(0.975, 4) == pytest.approx(2.776, abs=1e-3)
    assert stats.t_quantile(0.975, 10) == pytest.approx(2.228, abs=1e-3)
    assert stats.t_quantile(0.995, 30) == pytest.approx(2.750, abs=1e-3)
    assert stats.t_sf2(2.776, 4) == pytest.approx(0.05, abs=1e-3)
    assert stats.t_sf2(0.0, 7) == pytest.approx(1.0)


def test_holm_and_benjamini_hochberg():
    p = [0.01, 0.04, 0.03, 0.5]
    assert stats.adjust_pvalues(p, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert stats.adjust_pvalues(p, "bh") == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    assert stats.adjust_pvalues([], "holm") == []
    with pytest.raises(ValueError):
        stats.adjust_pvalues(p, "bonferroni-ish")


def ar1(rng: np.random.Generator, n: int, rho: float, sigma: float) -> np.ndarray:
    """Stationary AR(1) noise with marginal standard deviation ``sigma``."""
    e = rng.normal(0, sigma * math.sqrt(1 - rho * rho), n)
    x = np.empty(n)
    x[0] = rng.normal(0, sigma)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + e[i]
    return x


def rounds(rng, level: float, n_rounds: int, steps: int = 30, rho: float = 0.7, step_sd: float = 0.05,
           round_sd: float = 0.02, drift: np.ndarray | None = None) -> list[list[float]]:
    """Rounds of step times: each round its own offset (a new process), steps AR(1) within it."""
    out = []
    for r in range(n_rounds):
        offset = rng.normal(0, round_sd) + (drift[r] if drift is not None else 0.0)
        out.append(list(level * np.exp(offset + ar1(rng, steps, rho, step_sd))))
    return out


def test_block_length_grows_with_autocorrelation():
    rng = np.random.default_rng(0)
    white = ar1(rng, 60, 0.0, 1.0)
    sticky = ar1(rng, 60, 0.85, 1.0)
    assert stats.block_length(white) <= 3 and 6 <= stats.block_length(sticky) <= 20
    # Correlated steps carry less information: the block bootstrap says so.
    assert stats.block_bootstrap_log_median_var(10 + 0.3 * sticky) > stats.block_bootstrap_log_median_var(
        10 + 0.3 * white)


def test_too_few_rounds_or_steps_give_no_verdict():
    rng = np.random.default_rng(2)
    t = stats.compare_rounds(rounds(rng, 10, 1), rounds(rng, 20, 1))
    assert not t.enough and t.p is None and "at least 3" in t.note and t.ratio > 1.5
    t = stats.compare_rounds(rounds(rng, 10, 5, steps=1), rounds(rng, 10, 5, steps=1))
    assert not t.enough and "timed steps" in t.note
    with pytest.raises(ValueError):
        stats.compare_rounds([[1.0, float("nan"), 1.0]], [[1.0, 1.0, 1.0]])


def false_positive_rate(trials: int, paired: bool, **kw) -> float:
    rng = np.random.default_rng(11 if paired else 12)
    hits = 0
    for _ in range(trials):
        drift = np.cumsum(rng.normal(0, 0.03, 5)) if paired else None  # the machine wanders over the run
        t = stats.compare_rounds(rounds(rng, 10, 5, drift=drift, **kw), rounds(rng, 10, 5, drift=drift, **kw),
                                 paired=paired)
        hits += t.p < 0.05
    return hits / trials


@pytest.mark.parametrize("paired", [False, True])
def test_aa_false_positive_rate_holds_with_autocorrelation_and_round_offsets(paired):
    # 200 A/A comparisons, AR(1) steps (rho 0.7) and 2% per-round offsets: the 5% test must hold
    # its level (a binomial 99.9% bound above 5% of 200 is ~10%).
    assert false_positive_rate(200, paired) <= 0.10


def test_power_against_a_known_shift():
    # +5% with 1% run-to-run noise, 5 rounds: found nearly always; paired rounds cancel a drifting machine.
    rng = np.random.default_rng(3)
    found_unpaired = found_paired = 0
    for _ in range(100):
        drift = np.cumsum(rng.normal(0, 0.03, 5))
        b = rounds(rng, 10, 5, round_sd=0.01, step_sd=0.02, drift=drift)
        h = rounds(rng, 10.5, 5, round_sd=0.01, step_sd=0.02, drift=drift)
        found_unpaired += stats.compare_rounds(b, h).p < 0.05
        t = stats.compare_rounds(b, h, paired=True)
        found_paired += t.p < 0.05 and t.lo > 1.0
        assert 1.0 < t.ratio < 1.1
    assert found_paired >= 90 and found_paired > found_unpaired


def test_prediction_interval_includes_the_new_runs_own_variance():
    levels = [10.0, 10.2, 9.9, 10.1, 10.0]
    same = stats.prediction_test(levels, 10.15)
    assert same.p > 0.05 and same.lo < 1.0 < same.hi
    slower = stats.prediction_test(levels, 11.5)
    assert slower.p < 0.01 and slower.lo > 1.0
    # A confidence interval of the mean would be narrower: the prediction interval is sqrt(1 + 1/n) wider.
    assert not stats.prediction_test(levels[:1], 11.0).enough


def test_bootstrap_ratio_with_many_rounds_resamples_round_medians():
    rng = np.random.default_rng(5)
    base = [list(10 * (1 + rng.normal(0, 0.01)) + rng.normal(0, 0.1, 30)) for _ in range(300)]
    head = [list(11 * (1 + rng.normal(0, 0.01)) + rng.normal(0, 0.1, 30)) for _ in range(300)]
    point, lo, hi = stats.bootstrap_ratio(base, head)
    assert lo < point < hi and 1.09 < lo and hi < 1.11
    few_point, few_lo, few_hi = stats.bootstrap_ratio(base[:3], head[:3])  # the two-level resample
    assert few_lo <= few_point <= few_hi


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 174, 175, 1000])
def test_row_medians_are_numpys_to_the_last_bit(length):
    """The bootstrap's row medians are np.median's, ties and odd and even lengths alike."""
    rng = np.random.default_rng(length)
    for draw in (rng.lognormal(size=(400, length)), np.round(rng.lognormal(size=(400, length)), 1),
                 np.full((3, length), 2.5)):
        assert np.array_equal(stats.row_medians(draw), np.median(draw, axis=1))
