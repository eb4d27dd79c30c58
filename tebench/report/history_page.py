"""The history page: trend charts, the changes found, the latest run's verdicts, and the loss-parity verdicts that moved.

:func:`trend_figure` draws the series of :func:`tebench.analysis.history_changes.trends`
(one panel per device and workload/size, changes marked); :func:`render` writes
``history.html``, ``history.md`` and ``trends.png`` from what the history's
analyses found. It reads no database: ``tebench history report`` reads and judges
(:mod:`tebench.cli.history`), this module only shows.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tebench.analysis import compare
from tebench.analysis.history_changes import Series, change_rows
from tebench.report import Chart, html_table, md_table, png_bytes
from tebench.report.compare_markdown import headline_icon
from tebench.report.jinja_env import html_environment, markdown_environment
from tebench.store import atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def history_headline(deltas: list[compare.Delta], earlier: list[int]) -> str:
    """The history page's first line: the same words as ``compare`` (🟢 only when every judged case is
    unchanged, ⚪ when it cannot tell), against the number of earlier runs there really were."""
    counts = compare.tally(deltas)  # an improvement of a case that does not pass is not counted
    failing = sum(d.failing and d.counted for d in deltas)
    judged = sum(d.verdict not in compare.UNMEASURED for d in deltas)
    icon = headline_icon(failing=bool(failing), concern=bool(counts["slower"] or any(d.failing for d in deltas)),
                         unknown=bool(counts["inconclusive"] or not judged))
    n = max(earlier) if earlier else 0
    against = ("has no earlier run to compare with" if n == 0 else
               f"against the {n} run{'s' if n != 1 else ''} before it")
    words = [f"{failing} regression(s)"] + [f"{counts[v]} {v}" for v in ("slower", "improved", "faster") if counts[v]]
    if not_counted := sum(d.not_counted for d in deltas):
        words.append(f"{not_counted} gain(s) not counted")
    words += [f"{counts['unchanged']} unchanged", f"{counts['inconclusive']} inconclusive"]
    line = f"{icon} tebench history: the latest run {against}: " + ", ".join(words)
    if counts["inconclusive"]:
        line += (f". Can't tell for {counts['inconclusive']} case(s)"
                 + (f": {n} earlier run(s), a verdict needs at least {compare.Options().min_rounds}"
                    if 0 < n < compare.Options().min_rounds else "") + ".")
    return line


def trend_figure(series: list[Series]) -> Figure | None:
    """Median step time per run for every case, one panel per (device, workload/size); changes marked.
    None when there is no series (no case finished yet)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from tebench.report.charts import color

    if not series:
        return None
    panels: dict[tuple[str, str], list[Series]] = {}
    for s in series:
        panels.setdefault((s.device, s.group), []).append(s)
    cols = 2 if len(panels) > 1 else 1
    rows = int(np.ceil(len(panels) / cols))
    fig = Figure(figsize=(7.5 * cols, 3.6 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax, ((device, group), members) in zip(axes, panels.items()):
        for s in members:
            x = s.positions
            ax.plot(x, s.medians_ms, marker="o", markersize=3, color=color(s.mode), linewidth=1,
                    label=s.variant)
            for change in s.changes:
                xc = x[change.index] - 0.5
                if change.kind == "drift":
                    assert change.end is not None  # a drift always has its end
                    ax.axvspan(xc, x[change.end - 1] + 0.5, color=color(s.mode), alpha=0.08)
                else:
                    ax.axvline(xc, color=color(s.mode), linestyle="--" if change.awaiting else ":", linewidth=1.2)
                ax.annotate(f"{change.ratio - 1:+.0%}" + ("?" if change.awaiting else ""), (xc, change.after),
                            fontsize=7, color=color(s.mode))
        ax.set_title(f"{group} — {device}", fontsize=10)
        ax.set_xlabel("run (oldest → newest)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # runs are counted, never 0.2 of one
        ax.set_ylabel("median step time (ms)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    # Wrapped to the figure's width: a one-line title was clipped on both sides of a one-panel figure.
    fig.suptitle(textwrap.fill("Trends: median step time per run (dotted: step change; dashed '?': possible "
                               "change awaiting more runs; shaded: drift)", width=90 * cols),
                 fontsize=10)
    return fig


def method_text(opts: compare.Options, confirm: int) -> str:
    """How the page judged the latest run and found the changes, in one paragraph."""
    return ("latest run: each earlier run is one unit (median of its rounds' median step times); the latest "
            "run is judged against the prediction interval of one more run (its own run-to-run variance "
            f"included), p-values adjusted across cases ({opts.correction}), alpha {opts.alpha:g}; at least "
            f"{opts.min_rounds} earlier runs, else inconclusive. Trends: binary segmentation on run medians; "
            f"a change is reported once {confirm} runs follow it (before that: possible change, awaiting "
            "more runs); a segment a straight line fits as well as two levels is drift, not a step.")


def context(db: str | Path, df: pd.DataFrame, series: list[Series], deltas: list[compare.Delta],
            info: dict[str, Any], window: int, confirm: int, opts: compare.Options,
            chart: Chart | None, moved: pd.DataFrame) -> dict[str, Any]:
    """What both templates show: the headline, the verdicts that are not "unchanged", the loss-parity
    verdicts that moved between runs (``moved``), the changes found, the runs, and how they were judged."""
    regress = pd.DataFrame([{"device": d.device, "case": d.case_id,
                             "verdict": compare.verdict_text(d),
                             "step time": "–" if d.time_ratio is None else f"{d.time_ratio - 1:+.1%}",
                             "why": "; ".join(d.why + d.flags)}
                            # Inconclusive cases stay listed: the headline counts them, and a reader must
                            # see which cases the history could not judge.
                            for d in deltas if d.verdict != "unchanged"])
    runs = df.drop_duplicates("run_id")[["run_id", "created", "device", "git_commit"]] if not df.empty else df
    steps = pd.DataFrame(change_rows(series))
    if not steps.empty:
        steps["change"] = steps["change"].map(lambda v: f"{v:+.1%}")
        steps[["before_ms", "after_ms"]] = steps[["before_ms", "after_ms"]].round(3)
    earlier = [len(v["baseline_runs"]) for v in info.values()]
    return {
        "db": str(db), "window": window, "info": info, "chart": chart,
        "window_used": max(earlier, default=0),
        "headline": history_headline(deltas, earlier),
        "n_regressions": sum(d.failing and d.counted for d in deltas),
        "regressions": {"html": html_table(regress), "md": md_table(regress)},
        "steps": {"html": html_table(steps), "md": md_table(steps)},
        "n_moved": len(moved),
        "moved": {"html": html_table(moved), "md": md_table(moved)},
        "runs": {"html": html_table(runs), "md": md_table(runs)},
        "method": method_text(opts, confirm),
    }


def render(out: str | Path, db: str | Path, df: pd.DataFrame, series: list[Series], deltas: list[compare.Delta],
           info: dict[str, Any], window: int, confirm: int, opts: compare.Options, moved: pd.DataFrame) -> Path:
    """Write ``history.html`` and ``history.md`` (+ ``trends.png``) into ``out``; returns ``out``.

    ``df``: the database's rows (:func:`tebench.store.history.frame`); ``series``: their trends
    (:func:`tebench.analysis.history_changes.trends`); ``deltas`` and ``info``: the latest run judged
    (:func:`tebench.analysis.history_latest.latest_vs_recent`); ``moved``: the cases whose loss-parity verdict
    moved (:func:`tebench.analysis.verdict_moves.history_table`). Every file is written whole
    (a full disk leaves the previous one, never half of one).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fig = trend_figure(series)
    chart = Chart("trends", "Trends", "", png_bytes(fig)) if fig is not None else None
    if chart:
        atomic.write_bytes(out / "trends.png", chart.png)
    ctx = context(db, df, series, deltas, info, window, confirm, opts, chart, moved)
    atomic.write_text(out / "history.html", html_environment().get_template("history.html.j2").render(**ctx))
    atomic.write_text(out / "history.md", markdown_environment().get_template("history.md.j2").render(**ctx))
    return out
