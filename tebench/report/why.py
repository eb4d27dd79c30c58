"""The report's "why": where each case's step went, what its peak memory is made of, and a sentence per size.

Built from the stored kernels of the profiled extra steps, re-classified with
today's rules (:mod:`tebench.schema.kernel_rules`), so an improved rule table
explains old runs too. Nothing here exists for a record without kernels (a CPU
run, a record from before kernels were kept): the section is then left out.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from tebench.analysis import breakdown, memory
from tebench.analysis.breakdown import breakdown_of
from tebench.plan import modes
from tebench.schema import kernel_rules
from tebench.report import tables
from tebench.report.load import Source
from tebench.schema.records import CaseResult

IDLE = ("idle", "idle (GPU waits on the host)", "#ffffff")
LAUNCH_BOUND_FROM = 0.5
"""A step idle for at least this share is launch-bound: FP8 GEMMs cannot shorten it much."""
FP8_GEMM_PEAK_GAIN = 2.0
"""The datasheet ratio of dense FP8 to BF16 tensor-core peaks (Hopper, Blackwell): the most FP8 can
make a GEMM faster."""
CHART_SIZES = 12
"""Sizes drawn in the breakdown chart at most (the table has them all)."""


def frame(sources: list[Source]) -> pd.DataFrame:
    """One row per case (its last record) with kernels: the categories' ms, idle, MFU, FP8 proof and memory parts."""
    rows = []
    for src in sources:
        last: dict[str, CaseResult] = {}
        for rec in src.records:
            last[rec.case_id] = rec
        peak = src.header.peak_tflops
        for rec in last.values():
            # Re-derived with today's kernel rules: the stored time_breakdown is the run's.
            tb = breakdown_of(rec, peak)
            if tb is None:
                continue
            row: dict[str, Any] = {
                "source": src.label, "case_id": rec.case_id, "workload": rec.workload,
                "size": rec.size, "mode": rec.mode, "status": rec.status, "step_ms": tb.step_ms,
                "idle_ms": tb.idle_ms, "mfu": rec.throughput.mfu if rec.throughput else None,
                "mfu_mixed": tb.mfu_mixed,
                "fp8_proof": rec.fp8_proof.verdict if rec.fp8_proof is not None else None,
                "fp8_share": rec.fp8_proof.fp8_share if rec.fp8_proof is not None else None,
            }
            for key, _, _ in kernel_rules.CATEGORIES:
                row[key] = tb.categories_ms.get(key, 0.0)
            row["gemm_ms"] = sum(tb.categories_ms.get(k, 0.0) for k in tb.categories_ms if k.startswith("gemm_"))
            parts = memory.composition(rec.memory)
            for key, _, _ in memory.PARTS:
                row[f"mem_{key}"] = parts[key] if parts else None
            # parts imply rec.memory; the second test only tells the type checker so.
            row["mem_peak"] = rec.memory.peak_allocated_bytes if parts and rec.memory is not None else None
            rows.append(row)
    return pd.DataFrame(rows)


def _share(part: float, whole: float) -> str:
    return tables.fmt(part / whole, "pct") if whole > 0 else "–"


PARITY_COLUMNS = ("parity", "parity_rel_diff", "parity_reason", "parallel", "nproc")
"""What :func:`tables.counts` reads beside status and FP8 proof, and the reason a case that does not count names,
joined from the case frame by :func:`with_parity`."""


def with_parity(df: pd.DataFrame, cases: pd.DataFrame) -> pd.DataFrame:
    """``df`` (this module's frame) with the case frame's loss-parity columns, by machine and case: the verdicts
    the headline counts by, so the sentences pick among the same cases (:func:`tables.counts`)."""
    have = [c for c in PARITY_COLUMNS if c in cases]
    if df.empty or cases.empty or not have:
        return df
    return df.merge(cases[["source", "case_id", *have]], on=["source", "case_id"], how="left")


def _not_counted(row: pd.Series, base: pd.Series) -> str:
    """An FP8 case that does not count, as :func:`tables.not_counted_text` names it, at its profiled speed."""
    speed = base["step_ms"] / row["step_ms"] if row["step_ms"] > 0 else None
    return tables.not_counted_text(pd.Series({**row.to_dict(), "variant": row["case_id"].split("/", 2)[2],
                                              "speedup_vs_amp": speed, "median_ms": row["step_ms"]}))


def _other_library(fp8: pd.DataFrame, fastest: pd.Series) -> pd.Series | None:
    """The fastest case of ``fp8`` (proven FP8 cases that count) of the other FP8 library (TE or torchao) than
    ``fastest``'s, if any."""
    mine = modes.fp8_library(fastest["mode"])
    rest = fp8[fp8["mode"].map(modes.fp8_library) != mine]
    return rest.iloc[0] if not rest.empty else None


def gemm_estimate_words(measured: float | None, estimate: float, gemm_share: str) -> str:
    """One clause: the measured end-to-end speedup beside the one estimated from the GEMM share alone
    (Amdahl's law, FP8 GEMMs at :data:`FP8_GEMM_PEAK_GAIN` times BF16's speed), saying so where it exceeds it.

    Not a bound: FP8 also changes what is outside the GEMMs (casts, fused norms, fewer kernels) and the
    power draw and so the clocks, so a measured speedup above the estimate happens, and is explained.
    """
    basis = f"(GEMMs {gemm_share} of the step, at twice BF16's speed)"
    # Compared as shown: "×1.56 exceeds ×1.56" would read as a contradiction.
    if measured is not None and round(measured, 2) > round(estimate, 2):
        return (f"measured {tables.fmt(measured, 'x')} end to end exceeds the GEMM-only estimate "
                f"{tables.fmt(estimate, 'x')} {basis}: FP8 also sped up work outside GEMMs (casts, fused norms) "
                "or the clocks")
    return (f"end to end {tables.fmt(measured, 'x')} measured, against {tables.fmt(estimate, 'x')} estimated "
            f"from the GEMM share alone {basis}")


def sentences(df: pd.DataFrame) -> list[str]:
    """Per machine, workload and size: where the baseline's step goes, what FP8 did to it, and the estimate from
    the GEMM share alone.

    FP8 is described by the fastest proven FP8 case that counts (:func:`tables.counts`: loss parity passed; the
    parity columns come from :func:`with_parity`, and a frame without them counts every ok case), a faster one
    that does not count named beside it; a size whose proven FP8 cases all fail to count says so, no more.
    """
    out: list[str] = []
    if df.empty:
        return out
    counted = tables.counts(df)
    for (source, workload, size), g in df.groupby(["source", "workload", "size"], sort=False):
        ok = g[g["status"] == "ok"]
        base = ok[ok["mode"] == tables.BASELINE]
        proven = ok[(ok["fp8_proof"] == "fp8")].sort_values("step_ms")
        fp8 = proven[counted.loc[proven.index]]
        where = f"{workload}/{size}" + (f" on {source}" if df["source"].nunique() > 1 else "")
        if base.empty:
            continue
        b = base.iloc[0]
        text = (f"{where}: GEMMs are {_share(b['gemm_ms'], b['step_ms'])} of {tables.BASELINE}'s "
                f"{tables.fmt(b['step_ms'], 'ms')} ms step, attention {_share(b['attention'], b['step_ms'])}, "
                f"the GPU idles {_share(b['idle_ms'], b['step_ms'])}")
        if fp8.empty and not proven.empty:
            text += f". No FP8 case passed parity here; the fastest: {_not_counted(proven.iloc[0], b)}"
        if not fp8.empty:
            f = fp8.iloc[0]
            gain = b["gemm_ms"] / f["gemm_ms"] if f["gemm_ms"] > 0 else None
            share = b["gemm_ms"] / b["step_ms"] if b["step_ms"] > 0 else 0.0
            estimate = breakdown.amdahl(share, FP8_GEMM_PEAK_GAIN)
            measured = b["step_ms"] / f["step_ms"] if f["step_ms"] > 0 else None
            text += (f". {f['case_id'].split('/', 2)[2]} made the GEMMs {faster_words(gain)} "
                     f"({tables.fmt(b['gemm_ms'], 'ms')} → {tables.fmt(f['gemm_ms'], 'ms')} ms); its FP8 casts, "
                     f"transposes and amax took {tables.fmt(f['fp8_cast'], 'ms')} ms "
                     f"({_share(f['fp8_cast'], b['step_ms'])} of {tables.BASELINE}'s step); "
                     + gemm_estimate_words(measured, estimate, _share(b["gemm_ms"], b["step_ms"])))
            faster = proven[~counted.loc[proven.index] & (proven["step_ms"] < f["step_ms"])]
            if not faster.empty:
                text += f". Faster but not counted: {_not_counted(faster.iloc[0], b)}"
            idle = f["idle_ms"] / f["step_ms"] if f["step_ms"] > 0 else 0.0
            other = _other_library(fp8, f)
            if other is not None:
                text += (f". The other library's fastest, {other['case_id'].split('/', 2)[2]}, made them "
                         f"{faster_words(b['gemm_ms'] / other['gemm_ms'] if other['gemm_ms'] > 0 else None)}, with {tables.fmt(other['fp8_cast'], 'ms')} ms of FP8 casts and amax and "
                         f"{tables.fmt(other['norm'], 'ms')} ms of normalization (against "
                         f"{tables.fmt(f['norm'], 'ms')}): {tables.fmt(b['step_ms'] / other['step_ms'], 'x')} "
                         "end to end")
        else:
            idle = b["idle_ms"] / b["step_ms"] if b["step_ms"] > 0 else 0.0
        if idle >= LAUNCH_BOUND_FROM:
            text += (f". The GPU idles {tables.fmt(idle, 'pct')} of the step: launch-bound, so FP8 cannot help "
                     "until the step is larger (or CUDA graphs take the launches away)")
        out.append(text + ".")
    return out


def faster_words(ratio: float | None) -> str:
    """A time ratio (before / after) in words that agree with it: "×1.20 faster", "×1.02 slower" (never
    "×0.98 faster"), "no faster" at ×1.00."""
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return "– faster"
    if round(ratio, 2) == 1.0:
        return "no faster"
    return f"{tables.fmt(ratio, 'x')} faster" if ratio > 1 else f"{tables.fmt(1 / ratio, 'x')} slower"


TIME_COLUMNS = [("case_id", "case", ""), ("source", "machine", ""), ("step_ms", "step ms", "ms"),
                *((key, f"{label} ms", "ms") for key, label, _ in kernel_rules.CATEGORIES),
                ("idle_ms", "idle ms", "ms"), ("fp8_proof", "FP8 proof", ""), ("fp8_share", "FP8 share of GEMM time", "pct"),
                ("mfu", "MFU (dense BF16)", "pct"), ("mfu_mixed", "MFU (at each GEMM's precision)", "pct")]
MEMORY_COLUMNS = [("case_id", "case", ""), ("source", "machine", ""), ("mem_peak", "peak", "bytes"),
                  *((f"mem_{key}", label, "bytes") for key, label, _ in memory.PARTS)]


def time_columns(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The time table's columns, without categories that are zero in every case."""
    return [c for c in TIME_COLUMNS if c[0] not in kernel_rules.COLORS or (df[c[0]] > 0).any()]


def chart(df: pd.DataFrame) -> Figure | None:
    """Per size, one stacked bar per case: each category's ms per step, then idle."""
    if df.empty:
        return None
    groups = list(df.groupby(["source", "workload", "size"], sort=False))[:CHART_SIZES]
    keys = [k for k, _, _ in kernel_rules.CATEGORIES if (df[k] > 0).any()]
    heights = [max(1, len(g)) for _, g in groups]
    fig = Figure(figsize=(10, 1.0 + 0.42 * sum(heights) + 0.5 * len(groups)))
    axes = fig.subplots(len(groups), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    for ax, ((source, workload, size), g) in zip(axes, groups):
        g = g.iloc[::-1]
        left = [0.0] * len(g)
        for key in [*keys, "idle_ms"]:
            values = g[key].tolist()
            color = kernel_rules.COLORS.get(key, IDLE[2])
            label = kernel_rules.LABELS.get(key, IDLE[1])
            ax.barh(range(len(g)), values, left=left, color=color, edgecolor="#555555" if key == "idle_ms" else None,
                    hatch="//" if key == "idle_ms" else None, linewidth=0.5, label=label)
            left = [a + b for a, b in zip(left, values)]
        ax.set_yticks(range(len(g)), [c.split("/", 2)[2] + ("" if s == "ok" else f" ({s})")
                                      for c, s in zip(g["case_id"], g["status"])], fontsize=8)
        title = f"{workload}/{size}" + (f" — {source}" if df["source"].nunique() > 1 else "")
        ax.set_title(title, fontsize=9, loc="left")
        ax.set_xlabel("ms per step", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=4, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.9 / fig.get_figheight()))
    return fig
