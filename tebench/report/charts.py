"""Report charts. Each function takes tables or records and returns a Figure.

The caller decides where a figure goes (a PNG file for a Markdown page, a
data URI inside the HTML); it is rendered once and used for both. Figures are
built with the object-oriented matplotlib API (no pyplot state) on a fixed
grid measured in inches: a layout engine would lay every figure out in an
extra full draw, which made rendering the 54-case nightly three times slower.

Conventions, so that every chart reads at 100% zoom: text at least 9 pt at
110 dpi; small multiples instead of one crowded panel; a log axis where the
values span more than 10×; tick labels in engineering units ("170 TFLOP",
"680k"), never "1.7e+02". Every mode has one colour in every chart;
CUDA-graph variants are hatched or dashed.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable

import numpy as np
import pandas as pd

from tebench import workloads
from tebench.plan.modes import MODES, Mode, is_fp8
from tebench.schema.records import Band, CaseResult, FP8Options
from tebench.plan.recipes import RECIPES
from tebench.report import tables

# Charts are Figures saved to PNG: no GUI backend is used. matplotlib checks MPLBACKEND at import and
# refuses a name it does not know, which would end the report with an internal error: set it aside.
_MPLBACKEND = os.environ.pop("MPLBACKEND", None)
try:
    import matplotlib
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, Locator, LogLocator, MaxNLocator, NullFormatter
finally:
    if _MPLBACKEND is not None:
        os.environ["MPLBACKEND"] = _MPLBACKEND

DPI = 110
FONT = 9.0
"""Smallest text in any chart (points): tick labels, legends."""
CHAR_IN = 0.075
"""Approximate width of one 9 pt character in inches: margins are sized from label lengths."""
LOG_SPAN = 10.0
"""Values spanning more than this factor get a log axis."""
MAX_BARS = 60
"""Bars per panel, curves per loss panel: beyond this a chart would be unreadable (and huge); the tables hold all."""
NOT_COUNTED = "did not pass parity"
"""What a pale bar marked ✗ means: the case does not count (:func:`tables.counts`), it backs no speed claim."""
NOT_COUNTED_ALPHA = 0.3
_LOCS_FREE = (FuncFormatter, NullFormatter)
"""Formatters whose label for a tick does not depend on the other ticks' locations."""


def not_counted_mark(row: pd.Series) -> str:
    """Why a case does not count, in a few words: "did not pass parity (fail)", "FP8 proof partial"."""
    if row.get("fp8_proof") in tables.NOT_FP8_PROOFS and row.get("parity") in tables.COUNTING_VERDICTS:
        return f"FP8 proof {row['fp8_proof']}"
    return f"{NOT_COUNTED} ({row.get('parity') or 'not judged'})"


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

FALLBACK = Mode.color
"""The colour of a mode without one of its own, or one this tebench does not know (another version's)."""
# Distinct colours for curves inside one panel (tab10, then two that stay apart from it).
DISTINCT = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf", "#000000", "#e6ab02"]
LINESTYLES = ["-", "--", ":", "-."]


def color(mode: str) -> str:
    """The one colour a mode has in every chart: its registry entry's ``Mode.color``."""
    known = MODES.get(mode)
    return known.color if known is not None else FALLBACK


def distinct(i: int) -> tuple[str, str]:
    """Colour and line style of the i-th curve in a panel: no two of the first 48 alike."""
    return DISTINCT[i % len(DISTINCT)], LINESTYLES[(i // len(DISTINCT)) % len(LINESTYLES)]


def _plain(value: float, _pos: Any = None) -> str:
    """A tick number without exponent: 0.02, 5, 120, 1,500."""
    if value == 0:
        return "0"
    if abs(value) >= 1e4 or abs(value) < 1e-2:
        return eng(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _bytes(value: float, _pos: Any = None) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= div:
            return f"{value / div:.3g} {unit}"
    return f"{value:.0f} B"


_PREFIXES = {-12: "p", -9: "n", -6: "µ", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def eng(value: float, unit: str = "") -> str:
    """A number in engineering units, 3 significant digits: eng(1.7e14, "FLOP") == "170 TFLOP", eng(6.9e5) == "690k"."""
    value = float(value)
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}".strip()
    exp = max(-12, min(18, int(math.floor(math.log10(abs(value)) / 3) * 3)))
    digits = f"{value / 10 ** exp:.3g}"
    if abs(float(digits)) >= 1000 and exp < 18:  # 999.7 rounds to 1000: the next prefix up
        exp += 3
        digits = f"{value / 10 ** exp:.3g}"
    return f"{digits} {_PREFIXES[exp]}{unit}" if unit else f"{digits}{_PREFIXES[exp]}"


def spans(values: Any) -> bool:
    """True when positive values span more than LOG_SPAN: such an axis is drawn on a log scale."""
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a) & (a > 0)]
    return a.size > 1 and a.max() / a.min() > LOG_SPAN


def _axis(axis: Any, log: bool, formatter: Any = _plain, span: tuple[float, float] | None = None) -> None:
    """Scale and tick labels of one axis: log with 1-2-5 ticks, or linear; engineering labels either way."""
    if log:
        axis.axes.set_xscale("log") if axis is axis.axes.xaxis else axis.axes.set_yscale("log")
        lo, hi = axis.get_view_interval() if span is None else span
        decades = math.log10(hi / lo) if lo > 0 and hi > lo else 0.0
        # 1-2-5 ticks over a few decades; over many, one per decade (9 labels at most).
        subs = (1.0, 2.0, 5.0) if decades <= 3 else (1.0,)
        axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=9))
        axis.set_minor_formatter(NullFormatter())
    elif formatter is _bytes:
        axis.set_major_locator(_BytesLocator())
    axis.set_major_formatter(FuncFormatter(formatter))


class _BytesLocator(Locator):
    """Ticks at round numbers of the axis's own unit (100 MiB, 200 MiB …, not 47.7 MiB, 95.4 MiB …), at most
    five: labels such as "381 MiB" are wide, and six of them ran into each other on a 4.6 in panel."""

    def __call__(self) -> Any:
        assert self.axis is not None, "matplotlib sets a locator's axis before it asks for ticks"
        lo, hi = self.axis.get_view_interval()
        return self.tick_values(lo, hi)

    def tick_values(self, vmin: float, vmax: float) -> Any:
        top = max(abs(vmin), abs(vmax))
        div = next((d for d in (2**30, 2**20, 2**10) if top >= d), 1)
        return np.asarray(MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin / div, vmax / div)) * div


class _InView(Locator):
    """Another locator's ticks, only those inside the axis's view.

    matplotlib makes a tick (two lines and two texts) for every location a locator returns, then draws
    only those in view; a log axis's minor locator returns whole decades on either side. Tick objects
    were a quarter of a chart's drawing time and three in ten of them were never drawn.
    """

    def __init__(self, inner: Locator):
        self.inner = inner

    def set_axis(self, axis: Any) -> None:
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def __call__(self) -> Any:
        locs = np.asarray(self.inner(), dtype=float)
        if locs.size == 0:
            return locs
        # The same test as matplotlib's (in the scale's coordinates), with room to spare: a tick kept
        # that is not drawn costs time, one dropped that would have been drawn changes the chart.
        axis = self.axis
        assert isinstance(axis, Axis), "an axes' axis (matplotlib sets it before it asks for ticks)"
        transform = axis.get_transform()
        lo, hi = sorted(transform.transform(np.asarray(axis.get_view_interval(), dtype=float)))
        pad = 1e-6 * (hi - lo) if hi > lo else 1e-6
        with np.errstate(invalid="ignore", divide="ignore"):
            where = transform.transform(locs)
        return locs[~(where < lo - pad) & ~(where > hi + pad)]

    def tick_values(self, vmin: float, vmax: float) -> Any:
        return self.inner.tick_values(vmin, vmax)

    # Autoscaling asks the major locator for limits (a log locator keeps them positive): the inner one answers.
    def nonsingular(self, v0: float, v1: float) -> tuple[float, float]:
        return self.inner.nonsingular(v0, v1)

    def view_limits(self, vmin: float, vmax: float) -> tuple[float, float]:
        return self.inner.view_limits(vmin, vmax)


def lean_ticks(fig: Figure) -> None:
    """Make no tick that will not be drawn, and skip the label placement no label needs: the figure looks
    the same, drawn in less time. Call it just before the figure is drawn (its limits are final then).

    Only axes whose tick labels do not depend on which other ticks exist are trimmed: a function formatter
    (every chart's engineering labels) or none. matplotlib's default formatter picks its number of decimals
    from all the locations it gets, and fixed labels go by position, so their axes keep their locator.
    """
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            for formatter, locator, setter in (
                    (axis.get_major_formatter(), axis.get_major_locator(), axis.set_major_locator),
                    (axis.get_minor_formatter(), axis.get_minor_locator(), axis.set_minor_locator)):
                if isinstance(locator, _InView) or not isinstance(formatter, _LOCS_FREE):
                    continue
                setter(_InView(locator))
            # An axis without a label still measures every tick label of its row or column to place it.
            if not axis.label.get_text():
                axis.set_label_coords(0.5, 0.5)


def _grid_figure(rows: int, cols: int, panel_w: float, panel_h: float | list[float], left: float = 0.75,
                 right: float = 0.25, top: float = 0.6, bottom: float = 0.55, wspace: float = 0.7,
                 hspace: float = 0.75) -> tuple[Figure, np.ndarray]:
    """A figure of rows × cols panels of a fixed size (inches; one height per row if a list), margins
    fixed: no layout engine, one draw."""
    heights = list(panel_h) if isinstance(panel_h, (list, tuple)) else [panel_h] * rows
    width = left + right + cols * panel_w + (cols - 1) * wspace
    height = top + bottom + sum(heights) + (rows - 1) * hspace
    fig = Figure(figsize=(width, height), dpi=DPI)
    mean_h = sum(heights) / rows
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=wspace / panel_w, hspace=hspace / mean_h)
    axes = fig.subplots(rows, cols, squeeze=False, gridspec_kw={"height_ratios": heights})
    return fig, axes


def _dress(ax: Any, title: str | None = None, xlabel: str | None = None, ylabel: str | None = None,
           xpad: float = 0.42, ypad: float = 0.55) -> None:
    """Title and axis labels at fixed distances (inches) from the panel.

    matplotlib otherwise places each of them by measuring every tick label
    at draw time, which was half of the drawing time of a many-panel chart.
    """
    fig = ax.figure
    box = ax.get_position()
    w, h = box.width * fig.get_figwidth(), box.height * fig.get_figheight()
    ax.tick_params(labelsize=FONT)
    if title is not None:
        ax.set_title(title, fontsize=10, loc="left", y=1.0, pad=4)
    if xlabel is not None:
        ax.set_xlabel(xlabel, fontsize=FONT)
        ax.xaxis.set_label_coords(0.5, -xpad / h)
    if ylabel is not None:
        ax.set_ylabel(ylabel, fontsize=FONT)
        ax.yaxis.set_label_coords(-ypad / w, 0.5)


def _suptitle(fig: Figure, text: str) -> None:
    """The figure's title, left-aligned over the first panel (a narrow figure must not clip it)."""
    fig.suptitle(text, fontsize=11, x=min(0.1, 0.2 / fig.get_figwidth() * 3), y=1 - 0.12 / fig.get_figheight(),
                 va="top", ha="left")


def _groups(df: pd.DataFrame) -> list[tuple[tuple[str, str, str], pd.DataFrame]]:
    single = df[df["parallel"] == "single"]
    return [(key, g) for key, g in single.groupby(["source", "workload", "size"], sort=False)]


def _title(key: tuple[str, str, str], multi_source: bool) -> str:
    source, workload, size = key
    return f"{workload} / {size}" + (f"\n{source}" if multi_source else "")


def _bars(df: pd.DataFrame, value: str, xlabel: str, title: str, err: tuple[str, str] | None = None,
          refline: float | None = None, formatter: Any = _plain, mark: bool = False) -> Figure | None:
    """One horizontal bar panel per (machine, workload, size); rows keep the case table's order.

    ``mark``: a case that does not count (:func:`tables.counts`) is drawn pale with "✗" before its label, and
    the title says what that means; it is not left out (this is the detail view)."""
    groups = [(k, g[g[value].notna()].iloc[:MAX_BARS]) for k, g in _groups(df)]
    groups = [(k, g) for k, g in groups if not g.empty]
    if not groups:
        return None
    multi = df["source"].nunique() > 1
    counted = tables.counts(df) if mark else pd.Series(True, index=df.index)
    labels = {i: ("" if counted[i] else "✗ ") + str(v) for i, v in df["variant"].items()}
    longest = max(len(labels[i]) for _, g in groups for i in g.index)
    label_w = min(4.2, longest * CHAR_IN + 0.2)
    # Two panels side by side only while the chart stays within a page (~12.5 in at 110 dpi).
    cols = 2 if len(groups) > 1 and 2 * (label_w + 4.6) + 0.6 <= 12.5 else 1
    rows = math.ceil(len(groups) / cols)
    # Each row of panels is as tall as its longest panel needs: bars keep one thickness everywhere.
    per_row = [max(len(g) for _, g in groups[r * cols:(r + 1) * cols]) for r in range(rows)]
    fig, axes = _grid_figure(rows, cols, 4.6, [max(0.8, n * 0.24) for n in per_row], left=label_w,
                             wspace=label_w + 0.3, hspace=0.9, top=0.75, bottom=0.65)
    for i, (ax, (key, g)) in enumerate(zip(axes.ravel(), groups)):
        most = per_row[i // cols]
        g = g.iloc[::-1]
        y = np.arange(len(g))
        values = g[value].to_numpy(dtype=float)
        # Log where this panel's values span more than 10× (PT-FP32 would flatten the rest).
        log = spans(values)
        span = (float(values[values > 0].min()) / 1.6, float(values.max()) * 1.6) if log else None
        xerr = None
        if err:
            lo = (g[value] - g[err[0]]).clip(lower=0).to_numpy(dtype=float)
            hi = (g[err[1]] - g[value]).clip(lower=0).to_numpy(dtype=float)
            xerr = np.vstack([lo, hi])
        bars = ax.barh(y, values, xerr=xerr, color=[color(m) for m in g["mode"]], capsize=2.5,
                       edgecolor="black", linewidth=0.4, error_kw={"linewidth": 0.8})
        for bar, graphs, counts in zip(bars, g["graphs"], counted.loc[g.index]):
            if graphs:
                bar.set_hatch("//")
            if not counts:
                bar.set_alpha(NOT_COUNTED_ALPHA)
        ax.set_yticks(y, [labels[i] for i in g.index], fontsize=FONT)
        ax.set_ylim(-0.6 - (most - len(g)), len(g) - 0.4)
        if span:
            ax.set_xlim(*span)
        _axis(ax.xaxis, log, formatter, span=span)
        _dress(ax, _title(key, multi), xlabel + (" (log scale)" if log else ""))
        if refline is not None:
            ax.axvline(refline, color="black", linestyle="--", linewidth=0.8)
        ax.grid(axis="x", alpha=0.3)
    for ax in axes.ravel()[len(groups):]:
        ax.set_visible(False)
    if not counted.loc[[i for _, g in groups for i in g.index]].all():
        title += f"\npale, ✗: {NOT_COUNTED} (or FP8 proof partial): not counted"
    _suptitle(fig, title)
    return fig


def speedup(df: pd.DataFrame) -> Figure | None:
    """Speedup of every variant over PT-AMP (eager, same size); >1 is faster."""
    return _bars(df, "speedup_vs_amp", f"speedup over {tables.BASELINE} (×, higher is faster)",
                 f"Speedup over the {tables.BASELINE} baseline (dashed line: same speed)", refline=1.0, mark=True)


def step_time(df: pd.DataFrame) -> Figure | None:
    """Median train-step time with the interquartile range of the stored samples as error bars."""
    return _bars(df, "median_ms", "train step time (ms): median, bars = IQR", "Train-step time",
                 err=("p25_ms", "p75_ms"))


def memory(df: pd.DataFrame) -> Figure | None:
    """Peak memory: CUDA max allocated on a GPU, process peak RSS on the CPU."""
    kind = df["memory_kind"].dropna()
    label = "peak memory: CUDA max allocated" if (kind == "cuda").any() else "peak memory: process RSS"
    return _bars(df, "memory_bytes", label, "Peak memory", formatter=_bytes)


PYTORCH = "PyTorch"
"""The loss chart's one panel for every plain-PyTorch mode (``Mode.family == "pt"``, not FP8)."""


def family(case: dict[str, Any]) -> str:
    """The loss chart's panel a case (a matrix case's fields: ``mode``, ``fp8``) belongs to (:func:`mode_family`)."""
    fp8 = case.get("fp8")
    return mode_family(case["mode"], FP8Options.from_dict(fp8) if fp8 else None)


def mode_family(mode: str, fp8: FP8Options | None = None) -> str:
    """The loss chart's panel of a mode with these FP8 options: PyTorch, a TE mode, or an FP8 mode by recipe."""
    known = MODES.get(mode)
    if is_fp8(mode):
        return f"{mode} {fp8.recipe if fp8 else ''}".strip()
    if known is not None and known.family == "pt":
        return PYTORCH
    return mode


def _family_key(name: str) -> tuple[int, int, str]:
    order = [PYTORCH, *[m.name for m in MODES.values() if m.family != "pt" and not m.fp8]]
    if name in order:
        return (0, order.index(name), name)
    recipe = name.split(" ", 1)[1] if " " in name else ""
    recipes = list(RECIPES)
    return (1, recipes.index(recipe) if recipe in recipes else len(recipes), name)


def reference_band(recs: list[CaseResult], ref: CaseResult | None) -> Band | None:
    """The band the curves were judged against: ``parity.band`` when parity recorded one,
    else the reference curve ± the parity tolerance (the judge's own numbers)."""
    for rec in recs:
        band = rec.parity.band if rec.parity else None
        if band and band.step and band.lo and band.hi:
            return band
    if ref is None or ref.loss is None:
        return None
    losses = np.asarray(ref.loss.per_step, dtype=float)
    settings = ref.settings
    judged = [r.parity.tolerance for r in recs if r.parity and r.parity.tolerance is not None]
    tol = (np.full_like(losses, max(judged)) if judged else
           np.maximum(settings.parity_atol, settings.parity_rtol * np.abs(losses)))
    with np.errstate(invalid="ignore"):  # an infinite reference loss has no band at that step (NaN: a gap)
        lo, hi = losses - tol, losses + tol
    return Band(step=list(range(len(losses))), lo=[float(x) for x in lo], hi=[float(x) for x in hi],
                center=[float(x) for x in losses])


def _loss_groups(sources: list[Any]) -> list[tuple[tuple[str, str, str], list[CaseResult]]]:
    groups = []
    for src in sources:
        per_group: dict[tuple[str, str], list[CaseResult]] = {}
        for rec in src.records:
            if rec.loss and rec.loss.per_step and rec.round_no == 0 and rec.parallel == "single":
                per_group.setdefault((rec.workload, rec.size), []).append(rec)
        for (workload, size), recs in per_group.items():
            groups.append(((src.label, workload, size), recs))
    return groups


def loss_curves(sources: list[Any], df: pd.DataFrame) -> Figure | None:
    """Small multiples of the loss: a row per (machine, workload, size), a panel per mode family.

    Each panel repeats the reference curve (black) and the band it was judged
    against (grey), so every variant reads against the same yardstick; the
    legend names each variant with its verdict.
    """
    groups = _loss_groups(sources)
    if not groups:
        return None
    sizes = tables.size_order(df) if not df.empty else {}
    workloads = {w: i for i, w in enumerate(dict.fromkeys(df["workload"]))} if not df.empty else {}
    groups.sort(key=lambda g: (workloads.get(g[0][1], 99), sizes.get((g[0][1], g[0][2]), (math.inf, math.inf))))
    multi = len(sources) > 1
    layout = [_loss_row(key, recs) for key, recs in groups]
    panel_w = 3.4

    def label(rec: CaseResult, name: str) -> str:
        text = rec.variant
        mode = rec.mode
        if name.startswith(f"{mode} ") and text.startswith(f"{mode}/"):  # the panel already names the mode
            text = text[len(mode) + 1:]
        verdict = rec.verdict or ""
        return text + (f" ({verdict})" if verdict and verdict not in ("reference", "pass") else "")

    # One row per (machine, workload, size) with a column per family; when every size has
    # a single family, the panels flow over up to 4 columns instead of one tall column.
    panels = [(key, recs, ref, name, members, i == 0)
              for key, recs, ref, fams in layout for i, (name, members) in enumerate(fams)]
    widest = max(len(f) for *_, f in layout)
    if widest > 1:
        cols = widest
        slots = [r * cols + i for r, (*_, fams) in enumerate(layout) for i in range(len(fams))]
        rows = len(layout)
    else:
        cols = min(4, len(panels))
        rows = math.ceil(len(panels) / cols)
        slots = list(range(len(panels)))
    # Legends sit under their panel: two columns when the labels fit side by side, else one.
    longest = max((len(label(r, p[3])) for p in panels for r in p[4]), default=10)
    ncol = 2 if (longest + 4) * CHAR_IN * 2 <= panel_w + 0.4 else 1
    title_h = 0.2 if multi else 0.0  # the machine gets a second title line
    # Each row of panels gets the room its own longest legend needs, no more.
    entries = [0] * rows
    for p, slot in zip(panels, slots):
        entries[slot // cols] = max(entries[slot // cols], len(p[4]) + (2 if p[5] else 0))
    legend_h = [math.ceil(n / ncol) * 0.19 + 0.2 for n in entries]
    heights: list[float] = []
    for r in range(rows):
        heights += [2.3] + ([legend_h[r] + 0.85 + title_h] if r < rows - 1 else [])
    left, right, top, bottom, wspace = 0.7, 0.25, 0.7 + title_h, legend_h[-1] + 0.5, 0.55
    width = left + right + cols * panel_w + (cols - 1) * wspace
    height = top + bottom + sum(heights)
    fig = Figure(figsize=(width, height), dpi=DPI)
    grid = fig.add_gridspec(len(heights), cols, height_ratios=heights, hspace=0, wspace=wspace / panel_w,
                            left=left / width, right=1 - right / width, top=1 - top / height, bottom=bottom / height)
    flat = [fig.add_subplot(grid[2 * (slot // cols), slot % cols]) if slot in set(slots) else None
            for slot in range(rows * cols)]
    scales: dict[tuple, tuple] = {}
    for panel, slot in zip(panels, slots):
        key, recs, ref = panel[:3]
        if key not in scales:
            scales[key] = _loss_scale(recs, ref)
        _loss_panel(flat[slot], panel, scales[key], label, ncol, multi, first_column=slot % cols == 0)
    _suptitle(fig, "Loss curves against the reference")
    return fig


def _loss_row(key: tuple, recs: list[CaseResult]) -> tuple:
    """One row of the loss chart: its reference, and its other records by mode family (a panel each)."""
    ref = next((r for r in recs if r.verdict == "reference"), None)
    fams: dict[str, list[CaseResult]] = {}
    for rec in recs:
        if rec is not ref:
            members = fams.setdefault(mode_family(rec.mode, rec.fp8), [])
            if len(members) < MAX_BARS // 4:
                members.append(rec)
    if not fams and ref is not None:
        fams[mode_family(ref.mode, ref.fp8)] = []
    return key, recs, ref, sorted(fams.items(), key=lambda kv: _family_key(kv[0]))


def _loss_scale(recs: list[CaseResult], ref: CaseResult | None) -> tuple:
    """(log axis?, y range, reference band) shared by every panel of one row."""
    values = np.asarray([v for r in recs if r.loss is not None for v in r.loss.per_step], dtype=float)
    values = values[np.isfinite(values)]
    log = spans(values)
    # The y range follows the curves, not the band: near zero loss the band's
    # lower edge (reference - atol) would otherwise stretch a log axis over decades.
    lo, hi = (values.min(), values.max()) if values.size else (0.0, 1.0)
    ylim = (lo / 1.25, hi * 1.25) if log else (lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    return log, ylim, reference_band(recs, ref)


def _loss_panel(ax: Any, panel: tuple, scale: tuple, label: Callable[[CaseResult, str], str], ncol: int,
                multi: bool, first_column: bool) -> None:
    """One panel: the band, the reference curve and a family's curves, with its legend underneath."""
    key, recs, ref, name, members, first = panel
    log, ylim, band = scale
    # The band this panel's curves were judged against (PT-AMP's own band leaves out the
    # PT-AMP-vs-PT-FP32 noise, so it can be narrower than the other modes').
    band = reference_band(members, None) or band
    if band is not None:
        band_lo = np.asarray(band.lo, dtype=float)
        ax.fill_between(band.step, np.maximum(band_lo, ylim[0]) if log else band_lo, band.hi,
                        color="#bbbbbb", alpha=0.55, linewidth=0, label="reference band" if first else None)
    if ref is not None:
        ref_losses = ref.loss.per_step
        # Dashed and on top: a curve that follows the reference closely (the common case) would hide a
        # solid reference drawn beneath it.
        ax.plot(range(len(ref_losses)), ref_losses, color="black", linewidth=1.4, linestyle=(0, (3, 2.5)),
                zorder=4, label=f"{ref.mode} (reference, dashed)" if first else None)
    for j, rec in enumerate(members):
        c, style = distinct(j)
        losses = rec.loss.per_step
        ax.plot(range(len(losses)), losses, style if not rec.graphs else "--", color=c,
                linewidth=1.1, label=label(rec, name))
    warm = recs[0].loss.warmup_steps
    if warm:
        ax.axvline(warm - 0.5, color="black", linewidth=0.6, linestyle=":")
    ax.set_ylim(*ylim)
    _axis(ax.yaxis, log, span=ylim)
    source, workload, size = key
    title = f"{workload} / {size}: {name}" + (f"\n{source}" if multi else "")
    _dress(ax, title, "train step", ("training loss" + (" (log)" if log else "")) if first_column else None,
           xpad=0.36, ypad=0.5)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=FONT, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=ncol, frameon=False,
              handlelength=1.6, columnspacing=0.8)


def scaling(df: pd.DataFrame) -> Figure | None:
    """Step time, tokens/s and MFU against model size, one line per mode (best variant at each size).

    An FP8 mode's best is chosen among the variants that count (:func:`tables.counts`); a size where none
    does leaves a gap in its line."""
    # Module benchmarks mix module types under one workload: no size axis to scale along.
    ok = df[(df["status"] == "ok") & (df["parallel"] == "single") & df["flops_per_step"].notna()
            & (df["workload"].map(workloads.kind) == "model")]
    # A best FP8 is a speed claim: only cases that count. The sizes (the x axis) are still every timed one.
    claim = ~ok["mode"].map(is_fp8) | tables.counts(ok)
    series = []
    for (source, workload), g in ok.groupby(["source", "workload"], sort=False):
        if g["size"].nunique() < 2:
            continue
        series.append(((source, workload), g))
    if not series:
        return None
    fig, axes = _grid_figure(len(series), 3, 3.6, 2.8, left=0.9, right=1.9, top=0.75, bottom=0.85,
                             wspace=0.9, hspace=1.35)
    for row, ((source, workload), g) in zip(axes, series):
        order = g.groupby("size")["flops_per_step"].max().sort_values()
        x = np.arange(len(order))
        for (mode, graphs), mg in g[claim.loc[g.index]].groupby(["mode", "graphs"], sort=False):
            best = mg.loc[mg.groupby("size")["median_ms"].idxmin()].set_index("size").reindex(order.index)
            label = mode + (" + graphs" if graphs else "") + (" (best recipe)" if is_fp8(mode) else "")
            style = dict(color=color(mode), marker="o", linestyle="--" if graphs else "-", label=label)
            row[0].plot(x, best["median_ms"], **style)
            row[1].plot(x, best["tokens_per_s"], **style)
            if best["mfu"].notna().any():
                row[2].plot(x, best["mfu"] * 100, **style)
        _axis(row[0].yaxis, spans(g["median_ms"]))
        _axis(row[1].yaxis, spans(g["tokens_per_s"]), lambda v, _p=None: eng(v))
        ylabels = ("step time (ms" + (", log)" if spans(g["median_ms"]) else ")"), "tokens/s",
                   "MFU (% of dense BF16 peak)")
        for i, (ax, ylabel) in enumerate(zip(row, ylabels)):
            ax.set_xticks(x, [f"{s}\n{eng(f, 'FLOP')}" for s, f in order.items()], fontsize=FONT)
            ax.grid(alpha=0.3)
            _dress(ax, (f"{workload}" + (f" — {source}" if df["source"].nunique() > 1 else "")) if i == 0 else None,
                   "model size (training FLOPs per step)", ylabel, xpad=0.6, ypad=0.7)
        # No MFU where the device's peak is unknown (a CPU): the legend then lists the step-time lines.
        legend_of = row[2] if row[2].get_legend_handles_labels()[0] else row[0]
        row[2].legend(*legend_of.get_legend_handles_labels(), fontsize=FONT, loc="center left",
                      bbox_to_anchor=(1.03, 0.5), frameon=False)
    _suptitle(fig, "Scaling with model size (best variant of each mode, FP8's among those that passed parity; "
                   "dashed: CUDA graphs)")
    return fig


def _pick_layers(layers: list[tuple[str, Any]], limit: int) -> list[tuple[str, Any]]:
    """At most ``limit`` layers, spread over the depth (first, last and evenly between)."""
    if len(layers) <= limit:
        return layers
    idx = sorted({round(i) for i in np.linspace(0, len(layers) - 1, limit)})
    return [layers[i] for i in idx]


def fp8_state(record: CaseResult, max_layers: int = 12, note: str = "",
              reuse: dict[Any, Any] | None = None) -> Figure | None:
    """Scale and amax of each FP8 quantizer over the run, one line per layer (distinct colours).

    ``reuse``: a dict kept across the FP8-state charts of one report, where this function keeps a figure
    of each width and draws the next chart of that width into it (:func:`_blank_fp8_figure`). Its
    axes keep the tick objects they made, a quarter of the drawing time of a fresh figure. The caller
    must then save each figure before asking for the next (as :mod:`tebench.report.pool` does).
    """
    state = record.fp8_state
    if not state or not state.layers:
        return None
    steps = state.steps
    # Quantizers that never saw a value (amax always 0, scale still 1: e.g. the
    # attention core without FP8 attention) carry no information.
    layers = [(name, {role: q for role, q in quantizers.items() if any(a > 0 for a in q["amax"])})
              for name, quantizers in state.layers.items()]
    layers = _pick_layers([(name, q) for name, q in layers if q], max_layers)
    if not layers:
        return None
    # The weight's scale barely moves between steps; inputs and gradients are where scales drift.
    roles = ["fwd.gemm1.input", "bwd.gemm1.grad_output"]
    longest = max(len(name or "(root)") for name, _ in layers)
    fig, axes = _blank_fp8_figure(len(roles) + 1, longest, reuse)
    panels = [(ax, role, "scale") for ax, role in zip(axes, roles)] + [(axes[-1], "fwd.gemm1.input", "amax")]
    for ax, role, what in panels:
        for i, (name, quantizers) in enumerate(layers):
            if role in quantizers:
                c, style = distinct(i)
                ax.plot(steps, quantizers[role][what], marker=".", color=c, linestyle=style, linewidth=1,
                        label=name or "(root)")
        values = [v for _, q in layers if role in q for v in q[role][what]]
        log = spans(values)  # the grad-output scale jumps by decades after step 0; input scales barely move
        _axis(ax.yaxis, log, span=(min(v for v in values if v > 0), max(values)) if log else None)
        _dress(ax, f"{what}: {role}" + (" (log)" if log else ""), "train step",
               "scale" if ax is axes[0] else None, xpad=0.36)
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize=FONT, loc="center left", bbox_to_anchor=(1.03, 0.5), frameon=False)
    flags = state.flags or []
    _suptitle(fig, f"FP8 scaling state: {record.case_id}" + (f" — {note}" if note else "")
              + (f" — {len(flags)} flag(s)" if flags else ""))
    return fig


def _blank_fp8_figure(panels: int, longest: int, reuse: dict[Any, Any] | None) -> tuple[Figure, Any]:
    """An FP8-state figure of ``panels`` panels with room for legend labels of ``longest`` characters, as a
    new one is: made, or taken from ``reuse`` and emptied (curves, legend, scale and limits as new)."""
    key = ("fp8_state", panels, longest)
    if reuse is not None and key in reuse:
        fig, axes = reuse[key]
        for ax in axes:
            for line in list(ax.lines):
                line.remove()
            if ax.get_legend() is not None:
                ax.get_legend().remove()
            ax.set_yscale("linear")
            ax.relim()  # no curves left: no data limits
            ax.set_xlim(0, 1)  # a new axes' view, and autoscaling on again as on a new axes
            ax.set_ylim(0, 1)
            ax.autoscale(True)
        return fig, axes
    fig, grid = _grid_figure(1, panels, 3.1, 2.2, left=0.75, right=longest * CHAR_IN + 0.7, top=0.75,
                             bottom=0.55, wspace=0.55)
    axes = list(grid[0])
    if reuse is not None:
        reuse[key] = (fig, axes)
    return fig, axes


def comparison(df: pd.DataFrame, limit: int = 40) -> Figure | None:
    """The same cases on different machines, side by side (median step time, log scale)."""
    if df["source"].nunique() < 2:
        return None
    ok = df[df["status"] == "ok"]
    pivot = ok.pivot_table(index="case_id", columns="source", values="median_ms", aggfunc="first", sort=False)
    pivot = pivot.dropna()
    if pivot.empty:
        return None
    pivot = pivot.iloc[:limit].iloc[::-1]
    sources = list(pivot.columns)
    longest = max(len(str(c)) for c in pivot.index)
    label_w = min(4.5, longest * CHAR_IN + 0.2)
    fig, axes = _grid_figure(1, 1, 6.5, 0.22 * len(pivot) * len(sources) + 0.3, left=label_w, right=0.3,
                             top=0.65, bottom=0.65 + 0.2 * len(sources))
    ax = axes[0][0]
    y = np.arange(len(pivot))
    width = 0.8 / len(sources)
    for i, src in enumerate(sources):
        ax.barh(y + i * width, pivot[src], height=width, label=src, color=DISTINCT[i % len(DISTINCT)])
    ax.set_yticks(y + 0.4 - width / 2, pivot.index, fontsize=FONT)
    _axis(ax.xaxis, True)
    _dress(ax, None, "train step time (ms, median, log scale)")
    ax.legend(fontsize=FONT, loc="upper center", bbox_to_anchor=(0.5, -0.6 / ax.figure.get_figheight() - 0.05),
              frameon=False)
    ax.grid(axis="x", alpha=0.3)
    _suptitle(fig, "Machines side by side (cases present on all of them)")
    return fig
