"""Report tables, built with pandas from stored result records only.

:func:`case_frame` is the one table everything else derives from: a row per
(source, case), rounds pooled. Headline, crossover, distributed scaling and
cross-machine comparison are views of it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from tebench import results, stats
from tebench.matrix import Case
from tebench.report.load import Source

BASELINE = "PT-AMP"
COMPILED = "PT-AMP+compile"
CPU_BOUND_BELOW = 0.5
"""A GPU busy less than half of the step is labelled CPU-bound."""
STATUS_SEVERITY = ("failed", "timeout", "oom", "diverged", "ok", "skipped")


def _validation(rec: dict[str, Any]) -> tuple[str | None, float | None]:
    v = rec.get("validation") or {}
    metric = v.get("metric")
    return metric, v.get(metric) if metric else None


def _worst(statuses: list[str]) -> str:
    return min(statuses, key=STATUS_SEVERITY.index)


def case_frame(sources: list[Source]) -> pd.DataFrame:
    """One row per (source, case id): rounds pooled, statistics recomputed from samples."""
    rows = []
    for src in sources:
        peak = src.env.get("peak_tflops")
        groups: dict[str, list[dict[str, Any]]] = {}
        for rec in src.records:
            groups.setdefault(rec["case_id"], []).append(rec)
        for case_id, recs in groups.items():
            recs = sorted(recs, key=lambda r: r.get("round", 0))
            case = recs[-1]["case"]
            ok = [r for r in recs if r["status"] == "ok" and r.get("timing")]
            status = _worst([r["status"] for r in recs])
            reason = next((r.get("reason") for r in recs if r["status"] == status and r.get("reason")), None)
            last = (ok or recs)[-1]
            samples = [s for r in ok for s in r["timing"]["samples_ms"]]
            summary = stats.summarize(samples) if samples else (ok[-1]["timing"]["stats"] if ok else {})
            tp = last.get("throughput") or {}
            if summary.get("median") and tp.get("tokens_per_step"):
                tp = stats.throughput(summary["median"], tp["tokens_per_step"], tp.get("flops_per_step") or 0.0,
                                      peak, case.get("nproc", 1))
            mem, reserved = results.peak_memory(last), (last.get("memory") or {}).get("peak_reserved_bytes")
            par = last.get("parity") or {}
            metric, value = _validation(last)
            busy = (last.get("gpu_busy") or {}).get("busy_fraction")
            fp8 = case.get("fp8") or {}
            rows.append({
                "source": src.label,
                "workload": case["workload"],
                "size": case["size"],
                "mode": case["mode"],
                "variant": Case.from_dict(case).variant,
                "case_id": case_id,
                "recipe": fp8.get("recipe"),
                "graphs": bool(case.get("graphs")),
                "fp8_weights": bool(case.get("fp8_weights")),
                "parallel": case.get("parallel", "single"),
                "nproc": case.get("nproc", 1),
                "status": status,
                "reason": reason,
                "rounds": len(ok),
                "median_ms": summary.get("median"),
                "iqr_ms": summary.get("iqr"),
                "p25_ms": summary.get("p25"),
                "p75_ms": summary.get("p75"),
                "min_ms": summary.get("min"),
                "max_ms": summary.get("max"),
                "samples": len(samples),
                "samples_ms": [r["timing"]["samples_ms"] for r in ok],
                "round_medians_ms": [float(np.median(r["timing"]["samples_ms"])) for r in ok],
                "tokens_per_s": tp.get("tokens_per_s"),
                "tflops": tp.get("tflops"),
                "mfu": tp.get("mfu"),
                "flops_per_step": tp.get("flops_per_step"),
                "memory_bytes": mem,
                "reserved_bytes": reserved,
                "memory_kind": (last.get("memory") or {}).get("kind"),
                "final_loss": (last.get("loss") or {}).get("final"),
                "parity": par.get("verdict"),
                "parity_rel_diff": par.get("rel_diff"),
                "parity_reason": par.get("reason"),
                "curve_max_rel_dev": par.get("max_curve_rel_dev"),
                "curve_dev_step": par.get("max_curve_dev_step"),
                "reference_mode": par.get("reference_mode"),
                "reference_final": par.get("reference_final"),
                "parity_tolerance": par.get("tolerance"),
                "gpu_busy": busy,
                "bound": None if busy is None else ("CPU-bound" if busy < CPU_BOUND_BELOW else "GPU-bound"),
                "validation_metric": metric,
                "validation": value,
                "dims": case.get("dims", {}),
            })
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    return _add_baselines(df)


def _add_baselines(df: pd.DataFrame) -> pd.DataFrame:
    """Speedup and memory relative to PT-AMP (and PT-AMP+compile) of the same source, workload and size."""
    base = df[(df["mode"] == BASELINE) & ~df["graphs"] & (df["parallel"] == "single") & (df["status"] == "ok")]
    comp = df[(df["mode"] == COMPILED) & ~df["graphs"] & (df["parallel"] == "single") & (df["status"] == "ok")]
    key = ["source", "workload", "size"]
    b = base.set_index(key)[["median_ms", "memory_bytes"]].rename(
        columns={"median_ms": "amp_ms", "memory_bytes": "amp_mem"})
    c = comp.set_index(key)[["median_ms"]].rename(columns={"median_ms": "compile_ms"})
    df = df.join(b, on=key).join(c, on=key)
    ok = df["status"] == "ok"
    df["speedup_vs_amp"] = np.where(ok, df["amp_ms"] / df["median_ms"], np.nan)
    df["speedup_vs_compile"] = np.where(ok, df["compile_ms"] / df["median_ms"], np.nan)
    df["memory_vs_amp"] = np.where(ok, df["memory_bytes"] / df["amp_mem"], np.nan)
    return df


def _order_sizes(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(workload, size) pairs, smallest FLOPs first."""
    flops = df.groupby(["workload", "size"])["flops_per_step"].max().fillna(0)
    return list(flops.sort_values(kind="stable").index)


def headline(df: pd.DataFrame) -> pd.DataFrame:
    """Per source, workload and size: the fastest mode, its speedup and memory, and parity."""
    rows = []
    if df.empty:
        return pd.DataFrame(rows)
    for (source, workload, size), g in df.groupby(["source", "workload", "size"], sort=False):
        ok = g[(g["status"] == "ok") & g["median_ms"].notna() & (g["parallel"] == "single")]
        if ok.empty:
            continue
        best = ok.loc[ok["median_ms"].idxmin()]
        fp8 = ok[ok["mode"] == "TE-FP8"]
        best_fp8 = fp8.loc[fp8["median_ms"].idxmin()] if not fp8.empty else None
        judged = ok[ok["parity"].isin(["pass", "fail"])]
        rows.append({
            "source": source, "workload": workload, "size": size,
            "fastest": best["variant"],
            "step_ms": best["median_ms"],
            "speedup_vs_amp": best["speedup_vs_amp"],
            "speedup_vs_compile": best["speedup_vs_compile"],
            "memory_saving_vs_amp": 1 - best["memory_vs_amp"] if pd.notna(best["memory_vs_amp"]) else np.nan,
            "best_fp8": best_fp8["variant"] if best_fp8 is not None else None,
            "fp8_speedup_vs_amp": best_fp8["speedup_vs_amp"] if best_fp8 is not None else np.nan,
            "parity": ("fail: " + ", ".join(judged[judged["parity"] == "fail"]["variant"]))
            if (judged["parity"] == "fail").any() else (f"all {len(judged)} pass" if len(judged) else "n/a"),
            "not_ok": int((g["status"] != "ok").sum() - (g["status"] == "skipped").sum()),
        })
    return pd.DataFrame(rows)


def crossover(df: pd.DataFrame) -> pd.DataFrame:
    """Per source, workload and graphs setting: the smallest size at which TE-FP8 beats each baseline.

    Sizes are ordered by FLOPs per step. "Beats" compares the best TE-FP8
    variant with the baseline at the same size and CUDA-graphs setting, and
    counts only when the bootstrap interval of the speedup lies above 1.
    """
    rows = []
    if df.empty:
        return pd.DataFrame(rows)
    single = df[(df["status"] == "ok") & (df["parallel"] == "single") & ~df["fp8_weights"]
                & (df["workload"] != "module")]
    for source, sg in single.groupby("source", sort=False):
        for workload in sg["workload"].unique():
            sizes = [s for w, s in _order_sizes(sg[sg["workload"] == workload]) if w == workload]
            if len(sizes) < 2:
                continue
            for graphs in (False, True):
                g = sg[(sg["workload"] == workload) & (sg["graphs"] == graphs)]
                for baseline in (BASELINE, COMPILED):
                    first, ratio, compared = None, None, []
                    for size in sizes:
                        at = g[g["size"] == size]
                        fp8 = at[at["mode"] == "TE-FP8"]
                        base = at[at["mode"] == baseline]
                        if fp8.empty or base.empty:
                            continue
                        best = fp8.loc[fp8["median_ms"].idxmin()]
                        # "Beats" means faster beyond noise: the bootstrap interval of
                        # the step-time ratio must lie entirely above 1.
                        r, lo, _ = stats.bootstrap_ratio(best["samples_ms"], base.iloc[0]["samples_ms"],
                                                         resamples=400)
                        wins = lo > 1.0
                        compared.append(f"{size}: ×{r:.2f}" + ("" if wins or r < 1 else " (within noise)"))
                        if wins and first is None:
                            first, ratio = size, r
                    if not compared:
                        continue
                    rows.append({
                        "source": source, "workload": workload, "cuda_graphs": "on" if graphs else "off",
                        "baseline": baseline,
                        "fp8_first_faster_at": first or f"not reached (up to {sizes[-1]})",
                        "speedup_there": ratio,
                        "speedup_by_size": "; ".join(compared),
                    })
    return pd.DataFrame(rows)


def distributed(df: pd.DataFrame, sources: list[Source]) -> pd.DataFrame:
    """Data-parallel cases: per-rank and aggregate tokens/s, and efficiency against one GPU."""
    rows = []
    by_label = {s.label: s for s in sources}
    multi = df[df["parallel"] != "single"]
    for _, row in multi.iterrows():
        rec = next((r for r in by_label[row["source"]].records if r["case_id"] == row["case_id"]
                    and r.get("distributed")), None)
        single = df[(df["source"] == row["source"]) & (df["workload"] == row["workload"])
                    & (df["size"] == row["size"]) & (df["parallel"] == "single") & (df["status"] == "ok")
                    & (df["variant"] == row["variant"].rsplit("/", 1)[0])]
        one = float(single["tokens_per_s"].iloc[0]) if not single.empty else None
        agg = rec["distributed"]["aggregate_tokens_per_s"] if rec else None
        per_rank = ", ".join(f"{r['tokens_per_s']:,.0f}" for r in rec["distributed"]["per_rank"]) if rec else ""
        sync = rec["distributed"].get("replicas_in_sync") if rec else None
        rows.append({
            "source": row["source"], "case_id": row["case_id"], "status": row["status"],
            "ranks": row["nproc"], "per_rank_tokens_per_s": per_rank, "aggregate_tokens_per_s": agg,
            "replicas_in_sync": {True: "yes", False: "NO", None: "–"}[sync],
            "rank0_final_loss": row["final_loss"],
            "one_gpu_tokens_per_s": one,
            "scaling_efficiency": agg / (row["nproc"] * one) if (agg and one) else None,
        })
    return pd.DataFrame(rows)


def comparison(df: pd.DataFrame) -> pd.DataFrame:
    """Side by side: median step time of each case on each source, and the ratio to the first."""
    if df.empty or df["source"].nunique() < 2:
        return pd.DataFrame()
    ok = df[df["status"] == "ok"]
    pivot = ok.pivot_table(index="case_id", columns="source", values="median_ms", aggfunc="first")
    labels = list(dict.fromkeys(df["source"]))
    pivot = pivot.reindex(columns=[c for c in labels if c in pivot.columns])
    first = pivot.columns[0]
    for col in pivot.columns[1:]:
        pivot[f"{col} / {first}"] = pivot[col] / pivot[first]
    return pivot.reset_index()


def parity_failures(df: pd.DataFrame) -> pd.DataFrame:
    """Every case whose loss did not follow its reference, with the numbers and the reason."""
    if df.empty or "parity" not in df:
        return pd.DataFrame()
    return df[df["parity"] == "fail"]


def not_run(df: pd.DataFrame) -> pd.DataFrame:
    """Every case that did not finish ok, with its reason."""
    if df.empty:
        return df
    bad = df[df["status"] != "ok"][["source", "case_id", "status", "reason"]]
    order = {s: i for i, s in enumerate(STATUS_SEVERITY)}
    return bad.sort_values("status", key=lambda s: s.map(order), kind="stable")


def fmt(value: Any, kind: str = "") -> str:
    """Human formatting used by both HTML and Markdown."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if kind == "ms":
        return f"{value:.3g}" if value < 10 else f"{value:,.1f}"
    if kind == "x":
        return f"×{value:.2f}"
    if kind == "pct":
        return f"{value * 100:.1f}%"
    if kind == "bytes":
        for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if abs(value) >= div:
                return f"{value / div:.2f} {unit}"
        return f"{value:.0f} B"
    if kind == "int":
        return f"{value:,.0f}"
    if kind == "loss":
        return f"{value:.4g}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


CASE_COLUMNS: list[tuple[str, str, str]] = [
    # (column, heading, format)
    ("source", "machine", ""),
    ("case_id", "case", ""),
    ("status", "status", ""),
    ("median_ms", "step ms (median)", "ms"),
    ("iqr_ms", "IQR ms", "ms"),
    ("rounds", "rounds", ""),
    ("speedup_vs_amp", "vs PT-AMP", "x"),
    ("speedup_vs_compile", "vs PT-AMP+compile", "x"),
    ("tokens_per_s", "tokens/s", "int"),
    ("tflops", "TFLOP/s", ""),
    ("mfu", "MFU", "pct"),
    ("memory_bytes", "peak memory", "bytes"),
    ("reserved_bytes", "peak reserved", "bytes"),
    ("gpu_busy", "GPU busy", "pct"),
    ("final_loss", "final loss", "loss"),
    ("parity", "parity", ""),
    ("parity_rel_diff", "Δ loss vs ref", "pct"),
    ("curve_max_rel_dev", "max curve Δ", "pct"),
    ("validation", "validation", "loss"),
]

PARITY_COLUMNS: list[tuple[str, str, str]] = [
    ("source", "machine", ""),
    ("case_id", "case", ""),
    ("final_loss", "final loss", "loss"),
    ("reference_mode", "reference", ""),
    ("reference_final", "reference final", "loss"),
    ("parity_tolerance", "tolerance", "loss"),
    ("curve_max_rel_dev", "max curve Δ", "pct"),
    ("curve_dev_step", "at step", "int"),
    ("parity_reason", "why", ""),
]


def formatted(df: pd.DataFrame, columns: list[tuple[str, str, str]]) -> pd.DataFrame:
    """A display copy: chosen columns, headings, values formatted as text."""
    present = [(c, h, f) for c, h, f in columns if c in df.columns]
    out = pd.DataFrame({h: [fmt(v, f) for v in df[c]] for c, h, f in present})
    return out
