"""Report charts. Each function takes tables or records and returns a Figure.

The caller decides where a figure goes (a PNG file next to the Markdown, a
data URI inside the HTML). Figures are built with the object-oriented
matplotlib API (no pyplot state). Every mode has one colour in every chart
(variants of one mode in one panel get shades of it); CUDA-graph variants are
hatched or dashed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import matplotlib
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure


def use_plain_text() -> None:
    """Show every string in charts as typed: no mathtext, no LaTeX.

    Chart text is user data (size names, case ids, device names); a size named
    ``$\\foo{$`` would otherwise be parsed as mathtext and crash the render. Tick
    labels are created when a figure is drawn, long after a chart function
    returns, so this is a process-wide setting rather than a per-artist one.
    """
    matplotlib.rcParams["text.usetex"] = False
    matplotlib.rcParams["text.parse_math"] = False


use_plain_text()

MODE_COLORS = {
    "PT-FP32": "#7f7f7f",
    "PT-AMP": "#1f77b4",
    "PT-AMP+compile": "#17becf",
    "TE-BF16": "#2ca02c",
    "TE-FP8": "#d62728",
}
FALLBACK = "#9467bd"


def color(mode: str) -> str:
    return MODE_COLORS.get(mode, FALLBACK)


def shades(mode: str, n: int) -> list[str]:
    """``n`` shades of the mode's colour, dark to light, so that its variants stay apart."""
    if n <= 1:
        return [color(mode)]
    base = np.array(to_rgb(color(mode)))
    out = []
    for t in np.linspace(-0.5, 0.55, n):
        rgb = base * (1 + t) if t < 0 else base + (1 - base) * t
        out.append(to_hex(np.clip(rgb, 0, 1)))
    return out


def _grid(n: int, cols: int = 2) -> tuple[int, int]:
    cols = min(cols, max(1, n))
    return math.ceil(n / cols), cols


def _groups(df: pd.DataFrame) -> list[tuple[tuple[str, str, str], pd.DataFrame]]:
    single = df[df["parallel"] == "single"]
    return [(key, g) for key, g in single.groupby(["source", "workload", "size"], sort=False)]


def _title(key: tuple[str, str, str], multi_source: bool) -> str:
    source, workload, size = key
    return f"{workload} / {size}" + (f"\n{source}" if multi_source else "")


def _bars(df: pd.DataFrame, value: str, xlabel: str, title: str, err: tuple[str, str] | None = None,
          refline: float | None = None, scale: float = 1.0) -> Figure | None:
    groups = [(k, g[g[value].notna()]) for k, g in _groups(df)]
    groups = [(k, g) for k, g in groups if not g.empty]
    if not groups:
        return None
    multi = df["source"].nunique() > 1
    rows, cols = _grid(len(groups))
    height = max(2.6, max(len(g) for _, g in groups) * 0.32 + 1.2)
    fig = Figure(figsize=(6.5 * cols, height * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax, (key, g) in zip(axes, groups):
        g = g.iloc[::-1]
        y = np.arange(len(g))
        values = g[value].to_numpy(dtype=float) / scale
        xerr = None
        if err:
            lo = (g[value] - g[err[0]]).clip(lower=0).to_numpy(dtype=float) / scale
            hi = (g[err[1]] - g[value]).clip(lower=0).to_numpy(dtype=float) / scale
            xerr = np.vstack([lo, hi])
        bars = ax.barh(y, values, xerr=xerr, color=[color(m) for m in g["mode"]], capsize=3,
                       edgecolor="black", linewidth=0.4)
        for bar, graphs in zip(bars, g["graphs"]):
            if graphs:
                bar.set_hatch("//")
        ax.set_yticks(y, g["variant"], fontsize=8)
        ax.set_xlabel(xlabel)
        ax.set_title(_title(key, multi), fontsize=10)
        if refline is not None:
            ax.axvline(refline, color="black", linestyle="--", linewidth=0.8)
        ax.grid(axis="x", alpha=0.3)
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    fig.suptitle(title)
    return fig


def speedup(df: pd.DataFrame) -> Figure | None:
    """Speedup of every variant over PT-AMP (eager, same size); >1 is faster."""
    return _bars(df, "speedup_vs_amp", "speedup over PT-AMP (×, higher is faster)",
                 "Speedup over the PT-AMP baseline", refline=1.0)


def step_time(df: pd.DataFrame) -> Figure | None:
    """Median train-step time with the interquartile range of the stored samples as error bars."""
    return _bars(df, "median_ms", "train step time (ms): median, bars = IQR (p25–p75)",
                 "Train-step time", err=("p25_ms", "p75_ms"))


def memory(df: pd.DataFrame) -> Figure | None:
    """Peak memory: CUDA max allocated on a GPU, process peak RSS on the CPU."""
    kind = df["memory_kind"].dropna()
    label = "peak memory (GiB): CUDA max allocated" if (kind == "cuda").any() else "peak memory (GiB): process RSS"
    return _bars(df, "memory_bytes", label, "Peak memory", scale=2**30)


def loss_curves(sources: list[Any], df: pd.DataFrame) -> Figure | None:
    """Loss at every step for every mode, with the reference's parity band shaded."""
    panels = []
    for src in sources:
        per_group: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for rec in src.records:
            if rec.get("loss") and rec.get("round", 0) == 0 and rec["case"].get("parallel", "single") == "single":
                per_group.setdefault((rec["case"]["workload"], rec["case"]["size"]), []).append(rec)
        for (workload, size), recs in per_group.items():
            panels.append(((src.label, workload, size), recs))
    if not panels:
        return None
    multi = len(sources) > 1
    rows, cols = _grid(len(panels))
    fig = Figure(figsize=(6.5 * cols, 3.8 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax, (key, recs) in zip(axes, panels):
        ref = next((r for r in recs if (r.get("parity") or {}).get("verdict") == "reference"), None)
        if ref is not None:
            losses = np.asarray(ref["loss"]["per_step"], dtype=float)
            settings = ref["case"]["settings"]
            tol = np.maximum(settings.get("parity_atol", 0.05), settings.get("parity_rtol", 0.1) * np.abs(losses))
            steps = np.arange(len(losses))
            ax.fill_between(steps, losses - tol, losses + tol, color="#cccccc", alpha=0.6,
                            label=f"parity band ({ref['case']['mode']} ± tolerance)")
        per_mode: dict[str, list[dict[str, Any]]] = {}
        for rec in recs:
            per_mode.setdefault(rec["case"]["mode"], []).append(rec)
        for mode, variants in per_mode.items():
            for rec, shade in zip(variants, shades(mode, len(variants))):
                losses = rec["loss"]["per_step"]
                verdict = (rec.get("parity") or {}).get("verdict", "")
                style = "--" if rec["case"].get("graphs") else "-"
                label = rec["case_id"].split("/", 2)[2] + (f" ({verdict})" if verdict and verdict != "reference" else "")
                ax.plot(range(len(losses)), losses, style, color=shade, linewidth=1.1, label=label)
        warm = recs[0]["loss"].get("warmup_steps")
        if warm:
            ax.axvline(warm - 0.5, color="black", linewidth=0.6, linestyle=":")
        ax.set_xlabel("train step (dotted line: end of warm-up)")
        ax.set_ylabel("training loss")
        ax.set_title(_title(key, multi), fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="upper right")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("Loss curves (same weights, same batches; grey band = parity tolerance)")
    return fig


def scaling(df: pd.DataFrame) -> Figure | None:
    """Step time, tokens/s and MFU against model size, one line per mode (best variant at each size)."""
    # Module benchmarks mix module types under one workload: no size axis to scale along.
    ok = df[(df["status"] == "ok") & (df["parallel"] == "single") & df["flops_per_step"].notna()
            & (df["workload"] != "module")]
    series = []
    for (source, workload), g in ok.groupby(["source", "workload"], sort=False):
        if g["size"].nunique() < 2:
            continue
        series.append(((source, workload), g))
    if not series:
        return None
    fig = Figure(figsize=(16, 4.2 * len(series)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(series), 3))
    for row, ((source, workload), g) in zip(axes, series):
        order = g.groupby("size")["flops_per_step"].max().sort_values()
        x = np.arange(len(order))
        for (mode, graphs), mg in g.groupby(["mode", "graphs"], sort=False):
            best = mg.loc[mg.groupby("size")["median_ms"].idxmin()].set_index("size").reindex(order.index)
            label = mode + (" + graphs" if graphs else "") + (" (best recipe)" if mode == "TE-FP8" else "")
            style = dict(color=color(mode), marker="o", linestyle="--" if graphs else "-", label=label)
            row[0].plot(x, best["median_ms"], **style)
            row[1].plot(x, best["tokens_per_s"], **style)
            if best["mfu"].notna().any():
                row[2].plot(x, best["mfu"] * 100, **style)
        for ax, ylabel in zip(row, ("step time (ms, log)", "tokens/s", "MFU (% of dense BF16 peak)")):
            ax.set_xticks(x, [f"{s}\n{f / 1e12:.2g} TFLOP" for s, f in order.items()], fontsize=8)
            ax.set_xlabel("model size (training FLOPs per step)")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
        row[0].set_yscale("log")
        row[0].set_title(f"{workload} — {source}", fontsize=10, loc="left")
        row[0].legend(fontsize=7)
    fig.suptitle("Scaling with model size")
    return fig


def fp8_state(record: dict[str, Any], max_layers: int = 12) -> Figure | None:
    """Scale and amax of each FP8 quantizer over the run, one line per layer."""
    state = record.get("fp8_state")
    if not state or not state.get("layers"):
        return None
    steps = state["steps"]
    # Quantizers that never saw a value (amax always 0, scale still 1: e.g. the
    # attention core without FP8 attention) carry no information.
    layers = [(name, {role: q for role, q in quantizers.items() if any(a > 0 for a in q["amax"])})
              for name, quantizers in state["layers"].items()]
    layers = [(name, q) for name, q in layers if q][:max_layers]
    roles = ["fwd.gemm1.input", "fwd.gemm1.weight", "bwd.gemm1.grad_output"]
    fig = Figure(figsize=(15, 3.6), layout="constrained")
    axes = fig.subplots(1, len(roles) + 1)
    cmap = [f"C{i % 10}" for i in range(len(layers))]
    for ax, role in zip(axes, roles):
        for c, (name, quantizers) in zip(cmap, layers):
            if role in quantizers:
                ax.plot(steps, quantizers[role]["scale"], marker=".", color=c, label=name or "(root)", linewidth=1)
        ax.set_yscale("log")
        ax.set_title(f"scale: {role}", fontsize=9)
        ax.set_xlabel("train step")
        ax.grid(alpha=0.3)
    ax = axes[-1]
    for c, (name, quantizers) in zip(cmap, layers):
        if "fwd.gemm1.input" in quantizers:
            ax.plot(steps, quantizers["fwd.gemm1.input"]["amax"], marker=".", color=c, linewidth=1, label=name)
    ax.set_yscale("log")
    ax.set_title("amax (history max): fwd.gemm1.input", fontsize=9)
    ax.set_xlabel("train step")
    ax.grid(alpha=0.3)
    axes[0].set_ylabel("scale (log)")
    axes[-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.02, 0.5))
    flags = state.get("flags") or []
    fig.suptitle(f"FP8 scaling state: {record['case_id']}" + (f" — {len(flags)} flag(s)" if flags else ""),
                 fontsize=10)
    return fig


def comparison(df: pd.DataFrame, limit: int = 40) -> Figure | None:
    """The same cases on different machines, side by side (median step time, log scale)."""
    if df["source"].nunique() < 2:
        return None
    ok = df[df["status"] == "ok"]
    pivot = ok.pivot_table(index="case_id", columns="source", values="median_ms", aggfunc="first").dropna()
    if pivot.empty:
        return None
    pivot = pivot.iloc[:limit].iloc[::-1]
    sources = list(pivot.columns)
    fig = Figure(figsize=(10, 0.35 * len(pivot) * len(sources) / 1.5 + 2), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(pivot))
    width = 0.8 / len(sources)
    for i, src in enumerate(sources):
        ax.barh(y + i * width, pivot[src], height=width, label=src, color=f"C{i}")
    ax.set_yticks(y + 0.4 - width / 2, pivot.index, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("train step time (ms, median, log scale)")
    ax.legend(fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.suptitle("Machines side by side (cases present on all of them)")
    return fig
