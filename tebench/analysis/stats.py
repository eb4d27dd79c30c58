"""Statistics of throughput and MFU, and the tests over rounds: computed in one place only.

(The summary of one set of step times is :meth:`tebench.schema.records.Summary.of`.)

Raw per-step samples are always kept in the results; everything here is
derived from them and can be recomputed from stored results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np



def bootstrap_ratio(base: Sequence[Sequence[float]], head: Sequence[Sequence[float]],
                    resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> tuple[float, float, float]:
    """Ratio of medians head/base with a hierarchical bootstrap confidence interval.

    Each side is a list of rounds, each a list of per-step samples. A resample
    draws rounds with replacement, then samples within each drawn round, so
    drift between rounds widens the interval instead of hiding in it. From
    :data:`ROUND_LEVEL_FROM` rounds a side, the rounds' medians are resampled instead.
    """
    rng = np.random.default_rng(seed)
    if min(sum(1 for g in base if len(g)), sum(1 for g in head if len(g))) >= ROUND_LEVEL_FROM:
        return _round_level_ratio(base, head, rng, resamples, confidence)

    def medians(groups: Sequence[Sequence[float]]) -> np.ndarray:
        arrays = [np.asarray(g, dtype=float) for g in groups if len(g)]
        out = np.empty(resamples)
        for i in range(resamples):
            picked = [arrays[j] for j in rng.integers(0, len(arrays), len(arrays))]
            out[i] = np.median(np.concatenate([rng.choice(a, a.size) for a in picked]))
        return out

    point = float(np.median(np.concatenate([np.asarray(g, float) for g in head])) /
                  np.median(np.concatenate([np.asarray(g, float) for g in base])))
    ratios = medians(head) / medians(base)
    lo, hi = np.percentile(ratios, [(1 - confidence) / 2 * 100, (1 + confidence) / 2 * 100])
    return point, float(lo), float(hi)


ROUND_LEVEL_FROM = 8
"""With this many rounds a side, :func:`bootstrap_ratio` resamples round medians only: the rounds carry
the run-to-run spread, and resampling every step of hundreds of rounds made a report of a
10,000-record file take many minutes. Fewer rounds keep the two-level resample (and the same
numbers: every stored report has at most two rounds)."""


def _round_level_ratio(base: Sequence[Sequence[float]], head: Sequence[Sequence[float]], rng: np.random.Generator,
                       resamples: int, confidence: float) -> tuple[float, float, float]:
    def medians(groups: Sequence[Sequence[float]]) -> np.ndarray:
        levels = np.array([float(np.median(g)) for g in groups if len(g)])
        picks = rng.integers(0, len(levels), (resamples, len(levels)))
        return np.median(levels[picks], axis=1)

    point = float(np.median(np.concatenate([np.asarray(g, float) for g in head])) /
                  np.median(np.concatenate([np.asarray(g, float) for g in base])))
    ratios = medians(head) / medians(base)
    lo, hi = np.percentile(ratios, [(1 - confidence) / 2 * 100, (1 + confidence) / 2 * 100])
    return point, float(lo), float(hi)


# --- Comparing step times: the round (one process) is the unit of replication ---------------------
#
# Steps of one process share its state (allocator, clocks, CPU placement, what else ran), and
# consecutive steps are correlated (lag-1 autocorrelation 0.5-0.85 for small cases on the H200), so
# resampling steps as if independent makes intervals far too narrow. Each round is reduced to one
# level (the log of its median step time); rounds are compared with a t statistic, and the variance
# of a round's level is never taken smaller than a moving-block bootstrap of its own steps says.

from tebench.analysis.defaults import MIN_ROUNDS, MIN_STEPS  # noqa: E402  (their home; re-exported)


def lag1_autocorrelation(samples: Sequence[float] | np.ndarray) -> float:
    """Lag-1 autocorrelation of a series (0.0 for fewer than three values or no variance)."""
    a = np.asarray(samples, dtype=float)
    if a.size < 3:
        return 0.0
    d = a - a.mean()
    den = float((d * d).sum())
    return float((d[1:] * d[:-1]).sum() / den) if den > 0 else 0.0


def block_length(samples: Sequence[float] | np.ndarray, n: int | None = None) -> int:
    """Moving-block length for an AR(1)-like series: ``n^(1/3) * (2ρ/(1-ρ²))^(2/3)``
    (the asymptotically optimal rule for AR(1)), at least 1 and at most n/3.

    ``n``: the length of the resamples the blocks make up (default: the series' own)."""
    n = len(samples) if n is None else n
    rho = min(max(lag1_autocorrelation(samples), 0.0), 0.95)
    b = math.ceil(n ** (1 / 3) * (2 * rho / (1 - rho * rho)) ** (2 / 3)) if rho > 0 else 1
    return int(max(1, min(b, n // 3 or 1)))


MAX_BOOTSTRAP_STEPS = 10_000
"""Longest resample of one round's steps. A round with more steps (no stored result has more than a
few hundred) is resampled m-out-of-n: its variance is that of resamples of this many steps, scaled
by m/n, as the variance of a median falls as 1/n. Resampling every step of a round of a million
would cost 400 million draws (minutes and gigabytes) for a variance the rescaling gives as well."""


def row_medians(x: np.ndarray) -> np.ndarray:
    """``np.median(x, axis=1)`` of a 2-D array of finite numbers, the same values to the last bit, in a quarter
    of its time: one partition at the middle, and for an even row length the largest value below it (the
    other middle order statistic). The bootstrap below takes 400 medians a round, twice a round compared."""
    k = x.shape[1] // 2
    part = np.partition(x, k, axis=1)
    if x.shape[1] % 2:
        return part[:, k]
    return (part[:, :k].max(axis=1) + part[:, k]) / 2.0


def block_bootstrap_log_median_var(samples: Sequence[float] | np.ndarray, resamples: int = 400,
                                   seed: int = 0) -> float:
    """Variance of log(median) of one round, by a circular moving-block bootstrap of its steps.

    Rounds longer than MAX_BOOTSTRAP_STEPS are resampled MAX_BOOTSTRAP_STEPS steps at a time
    (blocks drawn from the whole round) and the variance scaled to the round's length."""
    a = np.asarray(samples, dtype=float)
    n = a.size
    if n < 2:
        return 0.0
    m = min(n, MAX_BOOTSTRAP_STEPS)
    b = block_length(a, m)
    rng = np.random.default_rng(seed)
    k = math.ceil(m / b)
    starts = rng.integers(0, n, (resamples, k))
    idx = ((starts[:, :, None] + np.arange(b)) % n).reshape(resamples, k * b)[:, :m]
    return float(np.var(np.log(row_medians(a[idx])), ddof=1)) * (m / n)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-13:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf2(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with ``df`` degrees of freedom."""
    if not math.isfinite(t):
        return 0.0
    return _betainc(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile (0.5 < q < 1) of Student's t, by bisection on the two-sided p-value."""
    target = 2.0 * (1.0 - q)
    lo, hi = 0.0, 1.0
    while t_sf2(hi, df) > target:
        hi *= 2.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if t_sf2(mid, df) > target else (lo, mid)
    return (lo + hi) / 2.0


@dataclass
class TimeTest:
    """Head/base step-time ratio with its interval and p-value, from round levels."""

    ratio: float
    """exp(mean log head round medians - mean log base round medians): a ratio of geometric means."""
    lo: float | None
    hi: float | None
    p: float | None
    """Two-sided p-value of 'no change' (None when there is too little data for a verdict)."""
    df: float | None
    rounds: tuple[int, int]
    """Rounds used per side (each with at least MIN_STEPS steps)."""
    paired: bool
    note: str | None = None
    """Why there is no p-value, when there is none."""

    @property
    def enough(self) -> bool:
        return self.p is not None


LOG_RATIO_MAX = 700.0
"""The largest log of a step-time ratio, or of its interval's ends, that is compared: e**709 is a float's
limit, and a factor of e**700 (1e304) is no measurement but a damaged side (a median of 5e-324 ms). Beyond
it the case is not comparable (:func:`compare_rounds`' note), never an overflow or an infinite ratio."""


def _not_comparable(what: str, log: float) -> str:
    return f"not comparable: {what} e^{abs(log):.0f}, beyond what a ratio can hold"


def _levels(rounds: Sequence[Sequence[float]], min_steps: int) -> tuple[np.ndarray, np.ndarray]:
    kept = [np.asarray(r, dtype=float) for r in rounds if len(r) >= min_steps]
    levels = np.array([math.log(float(np.median(r))) for r in kept])
    within = np.array([block_bootstrap_log_median_var(r, seed=i) for i, r in enumerate(kept)])
    return levels, within


def compare_rounds(base: Sequence[Sequence[float]], head: Sequence[Sequence[float]], paired: bool = False,
                   confidence: float = 0.95, min_rounds: int = MIN_ROUNDS, min_steps: int = MIN_STEPS) -> TimeTest:
    """Compare step times of two sides given as lists of rounds (each a list of step times, ms).

    Each round becomes one level, log(median step time). ``paired``: round i of
    base and head ran next to each other (``tebench ab``); their differences
    cancel the machine's slow drift (paired t, df = pairs - 1). Otherwise
    Welch's t on the two sets of levels. The variance of the levels is at least
    the rounds' own block-bootstrap variance, so two rounds that happen to agree
    cannot make an interval narrower than a round's own noise. Raises
    ValueError on a non-finite or non-positive step time.
    """
    for side in (base, head):
        for r in side:
            a = np.asarray(r, dtype=float)
            if a.size and not (np.isfinite(a).all() and (a > 0).all()):
                raise ValueError("non-finite or non-positive step time")
    lb, wb = _levels(base, min_steps)
    lh, wh = _levels(head, min_steps)
    if paired:
        n = min(lb.size, lh.size)
        lb, wb, lh, wh = lb[:n], wb[:n], lh[:n], wh[:n]
    nb, nh = lb.size, lh.size
    if not nb or not nh:
        return TimeTest(math.nan, None, None, None, None, (nb, nh), paired,
                        f"no round with at least {min_steps} timed steps on one side")
    log_ratio = float(lh.mean() - lb.mean())
    if not abs(log_ratio) <= LOG_RATIO_MAX:
        return TimeTest(math.nan, None, None, None, None, (nb, nh), paired,
                        _not_comparable("the step times differ by a factor of", log_ratio))
    ratio = math.exp(log_ratio)
    if min(nb, nh) < min_rounds:
        return TimeTest(ratio, None, None, None, None, (nb, nh), paired,
                        f"{min(nb, nh)} round(s) on one side; at least {min_rounds} are needed to separate "
                        "run-to-run noise from a change")
    if paired:
        d = lh - lb
        var = max(float(d.var(ddof=1)), float((wb + wh).mean())) / nb
        df = float(nb - 1)
    else:
        vb = max(float(lb.var(ddof=1)), float(wb.mean())) / nb
        vh = max(float(lh.var(ddof=1)), float(wh.mean())) / nh
        var = vb + vh
        df = var * var / (vb * vb / (nb - 1) + vh * vh / (nh - 1)) if var > 0 else float(nb + nh - 2)
    se = math.sqrt(var)
    if se == 0:
        # Identical constant rounds: no noise at all, so any difference is exact.
        p = 1.0 if log_ratio == 0 else 0.0
        return TimeTest(ratio, ratio, ratio, p, df, (nb, nh), paired)
    half = t_quantile(0.5 + confidence / 2, df) * se
    if not abs(log_ratio) + half <= LOG_RATIO_MAX:  # the interval's ends would overflow (or reach 0)
        return TimeTest(ratio, None, None, None, None, (nb, nh), paired,
                        _not_comparable("the interval of their ratio reaches a factor of", abs(log_ratio) + half))
    return TimeTest(ratio, math.exp(log_ratio - half), math.exp(log_ratio + half),
                    t_sf2(log_ratio / se, df), df, (nb, nh), paired)


def adjust_pvalues(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Adjusted p-values across a family of cases: ``holm`` (family-wise error) or ``bh``
    (Benjamini-Hochberg, false discovery rate). Compare each with the unadjusted alpha."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p)
    ranked = p[order]
    if method == "holm":
        adj = np.maximum.accumulate(ranked * (m - np.arange(m)))
    elif method == "bh":
        adj = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    else:
        raise ValueError(f"unknown correction {method!r} (holm, bh)")
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return [float(v) for v in out]


def prediction_test(levels: Sequence[float], latest: float, confidence: float = 0.95) -> TimeTest:
    """Is ``latest`` (one run's level, e.g. its median step time) outside what the earlier runs
    ``levels`` predict for *one more run*? The prediction interval includes the new run's own
    run-to-run variance: ``mean ± t·s·sqrt(1 + 1/n)``, computed on logs."""
    lv = np.log(np.asarray(levels, dtype=float))
    n = lv.size
    if n < 2 or not math.isfinite(latest) or latest <= 0:
        return TimeTest(latest / math.exp(lv.mean()) if n else math.nan, None, None, None, None, (n, 1), False,
                        f"{n} earlier run(s); at least 2 are needed for a run-to-run spread")
    d = math.log(latest) - float(lv.mean())
    se = float(lv.std(ddof=1)) * math.sqrt(1 + 1 / n)
    df = float(n - 1)
    if se == 0:
        return TimeTest(math.exp(d), math.exp(d), math.exp(d), 1.0 if d == 0 else 0.0, df, (n, 1), False)
    half = t_quantile(0.5 + confidence / 2, df) * se
    return TimeTest(math.exp(d), math.exp(d - half), math.exp(d + half), t_sf2(d / se, df), df, (n, 1), False)
