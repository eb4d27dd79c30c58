"""Loss parity and divergence: is a case training the same model as the reference?

Every mode of a workload starts from the same weights and sees the same
batches, so its loss curve should follow the reference mode's (PT-FP32 where
it ran, else PT-AMP). A case passes when its final loss is within
``max(atol, rtol * |reference|, 3 * reference noise)`` of the reference; the
whole curve is compared too, so a spike that recovers is still visible.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from tebench.modes import REFERENCE_MODES
from tebench.recipes import RECIPES

# A loss that ends this many times above where it started has diverged.
DIVERGED_FACTOR = 1.5


def final_window(losses: Sequence[float]) -> list[float]:
    """The last 10% of the steps (at least 3): the final loss is their mean."""
    k = max(3, len(losses) // 10)
    return list(losses[-k:])


def final_loss(losses: Sequence[float]) -> float | None:
    window = final_window(losses)
    return float(np.mean(window)) if window else None


def divergence(losses: Sequence[float]) -> str | None:
    """Why a loss curve counts as diverged, or None when it does not."""
    for step, value in enumerate(losses):
        if not math.isfinite(value):
            return f"loss became {value} at step {step}"
    if len(losses) >= 6:
        first, last = float(np.mean(losses[:3])), final_loss(losses)
        if last > DIVERGED_FACTOR * first:
            return f"loss rose from {first:.4g} (first steps) to {last:.4g} (final window)"
    return None


def _smooth(values: Sequence[float], width: int = 5) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    if a.size < width:
        return a
    kernel = np.ones(width) / width
    return np.convolve(a, kernel, mode="valid")


def evaluate(losses: Sequence[float], references: Sequence[Sequence[float]], reference_mode: str,
             rtol: float, atol: float) -> dict[str, Any]:
    """Compare a loss curve against one or more reference curves (rounds)."""
    refs = [list(r) for r in references if r and all(math.isfinite(v) for v in r)]
    if not refs or not losses:
        return {"verdict": "n/a", "reason": "no finite reference loss curve", "reference_mode": reference_mode}
    ref_finals = [final_loss(r) for r in refs]
    ref_final = float(np.mean(ref_finals))
    noise_within = float(np.std(final_window(refs[0]), ddof=1)) if len(final_window(refs[0])) > 1 else 0.0
    noise_rounds = float(np.std(ref_finals, ddof=1)) if len(ref_finals) > 1 else 0.0
    noise = max(noise_within, noise_rounds)
    tolerance = max(atol, rtol * abs(ref_final), 3.0 * noise)
    case_final = final_loss(losses)
    out: dict[str, Any] = {
        "reference_mode": reference_mode,
        "reference_rounds": len(refs),
        "final": case_final,
        "reference_final": ref_final,
        "abs_diff": None,
        "rel_diff": None,
        "tolerance": tolerance,
        "rtol": rtol,
        "atol": atol,
        "reference_noise": noise,
    }
    if case_final is None or not math.isfinite(case_final):
        out.update(verdict="fail", reason="final loss is not finite")
        return out
    diff = case_final - ref_final
    out["abs_diff"] = diff
    out["rel_diff"] = diff / abs(ref_final) if ref_final else None
    n = min(len(losses), len(refs[0]))
    if n:
        ref_curve = np.mean([r[:n] for r in refs if len(r) >= n], axis=0)
        dev = np.abs(_smooth(losses[:n]) - _smooth(ref_curve))
        scale = np.maximum(np.abs(_smooth(ref_curve)), atol)
        worst = int(np.argmax(dev / scale))
        out["max_curve_rel_dev"] = float((dev / scale)[worst])
        out["max_curve_dev_step"] = worst
    out["verdict"] = "pass" if abs(diff) <= tolerance else "fail"
    # Lower is not automatically better: a case that learns much faster than
    # its reference is training something else (or seeing what it should not).
    out["direction"] = "higher" if diff > 0 else "lower"
    if out["verdict"] == "fail":
        out["reason"] = (f"final loss {case_final:.4g} vs {reference_mode} {ref_final:.4g}: "
                         f"{out['direction']} by {abs(diff):.3g} > tolerance {tolerance:.3g}")
    return out


def reference_for(records: Sequence[dict[str, Any]], case: dict[str, Any]) -> tuple[str | None, list[list[float]]]:
    """The reference mode and its loss curves (all rounds) for ``case``'s workload and size.

    Only ``ok`` single-process, non-graphed reference runs of the same seed,
    steps and dimensions qualify: anything else would not be the same training.
    """
    def same_setup(other: dict[str, Any]) -> bool:
        keys = ("workload", "size", "dims")
        return (all(other[k] == case[k] for k in keys)
                and other["settings"]["seed"] == case["settings"]["seed"]
                and other["settings"]["steps"] + other["settings"]["warmup"]
                == case["settings"]["steps"] + case["settings"]["warmup"]
                and other["settings"]["lr"] == case["settings"]["lr"]
                and other["settings"].get("lr_warmup", 0) == case["settings"].get("lr_warmup", 0))

    for mode in REFERENCE_MODES:
        curves = [r["loss"]["per_step"] for r in records
                  if r.get("status") == "ok" and r["case"]["mode"] == mode and not r["case"].get("graphs")
                  and r["case"].get("parallel", "single") == "single" and same_setup(r["case"])]
        if curves:
            return mode, curves
    return None, []


def attach(records: list[dict[str, Any]]) -> None:
    """Judge (again) every record that has a loss curve, against the references among ``records``.

    Parity is always recomputed from the stored curves, so a report or merge
    judges with all the references it has (a shard may have lacked one) and
    with this tebench's rules.
    """
    for record in records:
        if record.get("loss") and record.get("status") in ("ok", "diverged"):
            record["parity"] = judge(records, record)


def judge(records: Sequence[dict[str, Any]], record: dict[str, Any]) -> dict[str, Any]:
    """Parity of one record against the best reference among ``records``."""
    case = record["case"]
    if case.get("parallel", "single") != "single":
        # Each rank trains on its own batch: the global batch is nproc times the
        # reference's, so the curves legitimately differ. Data-parallel
        # correctness is checked by the replicas staying identical instead.
        return {"verdict": "n/a", "reason": "data-parallel case: global batch is nproc x the single-device "
                                            "reference's; see the replica check in the multi-GPU table"}
    mode, curves = reference_for(records, case)
    if mode is None:
        return {"verdict": "n/a", "reason": "no reference mode (PT-FP32 or PT-AMP) ran for this workload and size"}
    is_reference = case["mode"] == mode and not case.get("graphs") and case.get("parallel", "single") == "single"
    # The reference is compared with its other rounds; one round compares with itself.
    if is_reference and len(curves) == 1:
        return {"verdict": "reference", "reference_mode": mode, "final": final_loss(record["loss"]["per_step"])}
    settings = case["settings"]
    out = evaluate(record["loss"]["per_step"], curves, mode, settings["parity_rtol"], settings["parity_atol"])
    fp8 = case.get("fp8") or {}
    spec = RECIPES.get(fp8.get("recipe"))
    if (out["verdict"] == "fail" and spec is not None and "calibration_steps" in spec.options
            and not fp8.get("calibration_steps")):
        # Measured on an H200 (README, "FP8 calibration"): the uncalibrated first
        # step is what moved these curves, not FP8 precision as such.
        out["reason"] += (f"; uncalibrated {spec.name} scaling: TE's first step quantizes with scale 1 "
                          "(compare the fp8.calibration_steps variant)")
    return out
