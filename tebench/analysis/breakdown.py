"""Why a step takes its time: the time breakdown, the FLOP split and the proof that an FP8 case ran FP8.

Derived in the parent from what the worker measured in its profiled extra
steps (``kernels``: every kernel by name, ``modules``: which modules ran under
FP8) and from the median of the timed steps; nothing here reads a timed step's
profile, because no timed step is profiled.
"""

from __future__ import annotations


from tebench.schema import kernel_rules as rules
from tebench.schema.environment import PeakRates
from tebench.plan.modes import MODES
from tebench.schema.records import CaseResult, FP8Proof, KernelTime, Kernels, ModuleCensus, TimeBreakdown

UNCLASSIFIED_KEPT = 10

HIGH_PRECISION = {"bf16": "bf16", "fp16": "bf16", "fp32": "fp32"}
"""A census precision -> the GEMM precision bucket (and peak) it is counted under."""


def _kernels(kernels: Kernels) -> list[KernelTime]:
    return list(kernels.kernels)


def _gemm_totals(kernels: Kernels) -> tuple[dict[str, float], dict[str, float]]:
    """GEMM milliseconds and launches per step by precision (every precision present, zero when none ran)."""
    ms = {p: 0.0 for p in rules.GEMM_PRECISIONS}
    calls = {p: 0.0 for p in rules.GEMM_PRECISIONS}
    for k in _kernels(kernels):
        key = rules.classify(k.name)
        if key.startswith("gemm_"):
            ms[key[5:]] += k.ms
            calls[key[5:]] += k.calls
    return ms, calls


def time_breakdown(kernels: Kernels, step_ms: float, flops_per_step: float | None = None,
                   census: ModuleCensus | None = None, high_precision: str = "bf16",
                   peak: PeakRates | None = None, tf32: bool | None = None) -> TimeBreakdown:
    """Each category's GPU milliseconds per step, the GEMMs by precision, idle time, FLOPs and mixed MFU.

    ``high_precision``: the bucket the model's FLOPs outside its linear layers
    (attention's matmuls) are counted in. ``peak``: the device's dense peaks
    (``bf16``, ``fp8``, ``fp32``); ``tf32``: whether fp32 matmuls ran as TF32, for
    which no peak is known (no mixed MFU then).
    """
    categories = {key: 0.0 for key, _, _ in rules.CATEGORIES}
    gemm_ms, gemm_calls = _gemm_totals(kernels)
    unclassified: list[KernelTime] = []
    for k in _kernels(kernels):
        key = rules.classify(k.name)
        if key == rules.ANNOTATION:
            continue
        categories[key] += k.ms
        if key == "other" and len(unclassified) < UNCLASSIFIED_KEPT:
            unclassified.append(KernelTime(name=k.name, ms=k.ms, calls=k.calls))
    if kernels.rest_ms:
        categories["other"] += kernels.rest_ms  # past the names kept: not classifiable
    flops = flop_split(flops_per_step, census, high_precision)
    return TimeBreakdown(
        step_ms=step_ms,
        categories_ms={k: v for k, v in categories.items() if v > 0},
        idle_ms=max(0.0, step_ms - kernels.union_ms),
        gemm_ms={k: v for k, v in gemm_ms.items() if v > 0} or None,
        gemm_calls={k: v for k, v in gemm_calls.items() if v > 0} or None,
        unclassified=unclassified or None,
        flops=flops,
        mfu_mixed=mixed_mfu(flops, step_ms, peak, tf32),
        rules=rules.RULES_VERSION,
    )


def flop_split(flops_per_step: float | None, census: ModuleCensus | None, high_precision: str
               ) -> dict[str, float] | None:
    """The model's FLOPs per step by GEMM precision: the linear layers' as the census saw them run, the
    rest (attention's matmuls) in the case's high precision. None where the census saw nothing."""
    if not flops_per_step or census is None or not census.observed or not census.linear_flops:
        return None
    out: dict[str, float] = {}
    for precision, flops in census.linear_flops.items():
        bucket = HIGH_PRECISION.get(precision, precision)
        out[bucket] = out.get(bucket, 0.0) + flops
    rest = flops_per_step - sum(out.values())
    if rest > 0:
        out[high_precision] = out.get(high_precision, 0.0) + rest
    return out


def mixed_mfu(flops: dict[str, float] | None, step_ms: float, peak: PeakRates | None,
              tf32: bool | None) -> float | None:
    """The time the FLOPs would take at each precision's dense peak, over the step: MFU against the mix."""
    if not flops or not peak or step_ms <= 0:
        return None
    ideal_s = 0.0
    for precision, n in flops.items():
        rate = None if (precision == "fp32" and tf32) else peak.rate(precision)
        if not rate:
            return None  # a precision without a known peak: no honest mixed figure
        ideal_s += n / (rate * 1e12)
    return ideal_s / (step_ms / 1000.0)


MIN_FP8_COVERAGE = 0.5
"""The least share of a case's linear FLOPs, and of its GEMM launches, that must run in FP8/FP4 for an
FP8 result. Measured on an H200: a correct TE-FP8 GPT ran 48 of 52 GEMM launches and 99.7% of its
linear FLOPs in FP8; Llama d2048, whose 128k-vocab LM head stays in BF16 by design, ran 79% of its
linear FLOPs in FP8; a model whose blocks 2-4 ran outside FP8 autocast ran 12 of 55 launches (22%).
Half sits well clear of both sides: a big BF16 head passes, a model mostly outside the recipe does not."""

OUTSIDE_RECIPE_KEPT = 20
"""Names of TE modules that ran without the recipe kept on the proof (the census keeps as many)."""


def _low_flops_share(census: ModuleCensus | None) -> float | None:
    """The FP8/FP4 share of the census's linear FLOPs; None where the census cannot say.

    Only TE modules report FP8 to the census (torchao's Float8Linear counts as its autocast dtype),
    so without a TE module seen the share would read 0 for a case that may well run FP8: unknown.
    """
    if census is None or not census.observed or not census.linear_flops:
        return None
    if not (census.te_fp8 or 0) + (census.te_high_precision or 0):
        return None
    total = sum(census.linear_flops.values())
    if total <= 0:
        return None
    return (census.linear_flops.get("fp8", 0.0) + census.linear_flops.get("fp4", 0.0)) / total


def _pct(share: float) -> str:
    # Rounded down, so a share just under the bar never reads as the bar itself ("50%, below 50%").
    return f"{int(share * 100 + 1e-9)}%"


def _names(names: list[str], kept: int = 3) -> str:
    return ", ".join(names[:kept]) + (" …" if len(names) > kept else "")


def _shortfall(te_fp8: int | None, te_high: int | None, outside: list[str] | None,
               call_share: float | None, calls_known: bool, low_calls: float, gemm_calls: float,
               flops_share: float | None) -> str | None:
    """What fell short of full FP8 coverage, in words with the numbers; None where nothing did."""
    short: list[str] = []
    if te_fp8 and te_high:
        short.append("TE modules ran outside the recipe")
    # Launches of unknown precision (another GPU's kernel names) prove nothing either way.
    if call_share is not None and calls_known and call_share < MIN_FP8_COVERAGE:
        short.append(f"under {_pct(MIN_FP8_COVERAGE)} of GEMM launches in FP8")
    if flops_share is not None and flops_share < MIN_FP8_COVERAGE:
        short.append(f"under {_pct(MIN_FP8_COVERAGE)} of linear FLOPs in FP8")
    if not short:
        return None
    covered: list[str] = []
    if te_fp8 is not None:
        modules = f"{te_fp8} of {te_fp8 + (te_high or 0)} TE modules"
        if outside:
            modules += f" (outside the recipe: {_names(outside)})"
        covered.append(modules)
    if call_share is not None:
        covered.append(f"{low_calls:g} of {gemm_calls:g} GEMM launches")
    if flops_share is not None:
        covered.append(f"{_pct(flops_share)} of linear FLOPs")
    return f"FP8 covered {', '.join(covered)}; short: {'; '.join(short)}"


def fp8_proof(kernels: Kernels | None, census: ModuleCensus | None) -> FP8Proof:
    """Whether a case in an FP8 mode ran FP8 (or FP4) GEMMs, from its kernels and its module census.

    ``no-fp8`` needs evidence: GEMMs whose names all say a high precision, or
    TE modules seen running without an FP8 recipe and none with one. GEMM
    names no rule knows (another GPU's kernels) with TE modules under FP8 stay
    ``unproven``, never refused. ``partial``: FP8 ran (FP8 GEMM launches, or TE
    modules under the recipe) but covered too little of the model: TE modules
    both with and without the recipe, or under :data:`MIN_FP8_COVERAGE` of the
    linear FLOPs or of the GEMM launches in FP8. Such a case trained and was
    timed, but its times are not an FP8 model's.
    """
    seen = census if census is not None and census.observed else None
    te_fp8 = seen.te_fp8 if seen else None
    te_high = seen.te_high_precision if seen else None
    outside = list(seen.te_outside_fp8[:OUTSIDE_RECIPE_KEPT]) if seen and seen.te_outside_fp8 else None
    flops_share = _low_flops_share(census)
    modules = (f"; TE modules under an FP8 recipe: {te_fp8} of {te_fp8 + (te_high or 0)}"
               if te_fp8 is not None else "")
    if outside:
        modules += f" (without one: {', '.join(outside[:5])}" + (" …)" if len(outside) > 5 else ")")
    if kernels is None:
        verdict = "no-fp8" if (te_fp8 == 0 and te_high) else "unproven"
        note = "no kernels profiled" + modules
        if verdict == "unproven" and te_fp8:
            short = _shortfall(te_fp8, te_high, outside, None, False, 0.0, 0.0, flops_share)
            if short:
                verdict, note = "partial", short + " (no kernels profiled)"
        return FP8Proof(verdict=verdict, te_fp8=te_fp8, te_high_precision=te_high, note=note,
                        fp8_linear_flops_share=flops_share, outside_recipe=outside)
    ms, calls = _gemm_totals(kernels)
    low_ms, low_calls = ms["fp8"] + ms["fp4"], calls["fp8"] + calls["fp4"]
    gemm_ms, gemm_calls = sum(ms.values()), sum(calls.values())
    call_share = low_calls / gemm_calls if gemm_calls else None
    ran = ", ".join(f"{calls[p]:g} {p}" for p in rules.GEMM_PRECISIONS if calls[p]) or "none"
    if low_calls > 0:
        verdict = "fp8"
        note = f"{low_calls:g} of {gemm_calls:g} GEMM launches per step in FP8/FP4 ({ran})" + modules
    elif gemm_calls and (calls["unknown"] == 0 or te_fp8 == 0):
        verdict = "no-fp8"
        note = f"no GEMM ran in FP8: GEMM launches per step {ran}" + modules
    elif te_fp8 == 0 and te_high:
        verdict = "no-fp8"
        note = "no TE module ran under an FP8 recipe" + modules
    else:
        verdict = "unproven"
        note = (f"no GEMM kernel name says FP8, but none says otherwise either ({ran})" if gemm_calls
                else "no GEMM kernel in the profiled steps") + modules
    # FP8 evidence (FP8 launches, or TE modules under the recipe) that covers too little: partial.
    if verdict in ("fp8", "unproven") and (low_calls > 0 or te_fp8):
        short = _shortfall(te_fp8, te_high, outside, call_share, calls["unknown"] == 0, low_calls, gemm_calls,
                           flops_share)
        if short:
            verdict, note = "partial", f"{short} (GEMM launches per step: {ran})"
    return FP8Proof(verdict=verdict, fp8_gemm_ms=low_ms, gemm_ms=gemm_ms, fp8_gemm_calls=low_calls,
                    gemm_calls=gemm_calls, te_fp8=te_fp8, te_high_precision=te_high,
                    fp8_gemm_call_share=call_share, note=note, fp8_linear_flops_share=flops_share,
                    outside_recipe=outside)


def amdahl(gemm_share: float, gemm_speedup: float) -> float:
    """End-to-end speedup when a step's GEMMs (``gemm_share`` of it) run ``gemm_speedup`` times faster."""
    return 1.0 / ((1.0 - gemm_share) + gemm_share / gemm_speedup)


def high_precision(record: CaseResult) -> str:
    """The GEMM precision a case's non-FP8 matmuls run in: fp32 without autocast, else bf16 (fp16 counts as bf16)."""
    mode = MODES.get(record.mode)
    return "bf16" if mode is None or mode.amp or mode.family == "te" else "fp32"


def breakdown_of(record: CaseResult, peak: PeakRates | None) -> TimeBreakdown | None:
    """The record's time breakdown from its profiled kernels, its median step and its throughput's FLOPs
    (one rank's: the census counts one rank's layers); None without kernels or timed steps.

    The one derivation: the runner stores it, a report derives it again with today's kernel rules.
    """
    if record.kernels is None or not record.timing or not record.timing.samples_ms:
        return None
    tp = record.throughput
    flops = tp.flops_per_step / (record.nproc or 1) if tp and tp.flops_per_step else None
    setup = record.setup
    return time_breakdown(
        record.kernels, record.timing.summary.median or 0.0, flops, record.modules, high_precision(record),
        peak, setup.tf32_matmul if setup is not None else None)
