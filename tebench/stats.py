"""Statistics of timing samples, throughput and MFU: computed in one place only.

Raw per-step samples are always kept in the results; everything here is
derived from them and can be recomputed from stored results.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def summarize(samples: Sequence[float]) -> dict[str, Any]:
    """Median, dispersion and extremes of per-step times (milliseconds)."""
    a = np.asarray(samples, dtype=float)
    if a.size == 0:
        return {"n": 0}
    p10, p25, p50, p75, p90 = np.percentile(a, [10, 25, 50, 75, 90])
    return {
        "n": int(a.size),
        "median": float(p50),
        "mean": float(a.mean()),
        "stdev": float(a.std(ddof=1)) if a.size > 1 else 0.0,
        "min": float(a.min()),
        "max": float(a.max()),
        "p10": float(p10),
        "p25": float(p25),
        "p75": float(p75),
        "p90": float(p90),
        "iqr": float(p75 - p25),
        "iqr_rel": float((p75 - p25) / p50) if p50 else None,
    }


def throughput(median_ms: float, tokens: int, flops: float, peak: dict[str, Any] | None,
               nproc: int = 1) -> dict[str, Any]:
    """Tokens/s, achieved TFLOP/s and MFU from the median step time.

    MFU is against the device's dense BF16 peak for every mode (one yardstick,
    so modes compare directly); it is None when the GPU is unknown or the
    workload has no meaningful FLOP count.
    """
    seconds = median_ms / 1000.0
    tflops = flops / seconds / 1e12 if seconds > 0 and flops > 0 else None
    peak_bf16 = peak.get("bf16") if peak else None
    mfu = tflops / (peak_bf16 * nproc) if (tflops is not None and peak_bf16) else None
    return {
        "tokens_per_step": tokens,
        "tokens_per_s": tokens / seconds if seconds > 0 else None,
        "flops_per_step": flops,
        "tflops": tflops,
        "mfu": mfu,
        "mfu_basis": f"dense BF16 peak {peak_bf16} TFLOP/s x {nproc} GPU(s) ({peak.get('source')})" if mfu else None,
    }


def bootstrap_ratio(base: Sequence[Sequence[float]], head: Sequence[Sequence[float]],
                    resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> tuple[float, float, float]:
    """Ratio of medians head/base with a hierarchical bootstrap confidence interval.

    Each side is a list of rounds, each a list of per-step samples. A resample
    draws rounds with replacement, then samples within each drawn round, so
    drift between rounds widens the interval instead of hiding in it.
    """
    rng = np.random.default_rng(seed)

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
