"""The report's charts as jobs: which charts a report has, with their titles and captions, drawn once each.

:func:`chart_jobs` lists every chart the page may show (the chart functions
live in :mod:`tebench.report.charts`, :mod:`~tebench.report.harness_cost` and
:mod:`~tebench.report.why`); :func:`draw_charts` draws them through
:mod:`tebench.report.pool` and sorts them into the places the templates show them.
"""

from __future__ import annotations

import base64
import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd

from tebench.report import charts, tables
from tebench.report import harness_cost as phases
from tebench.report import why as why_mod
from tebench.report.load import Source
from tebench.report.pool import draw_all
from tebench.schema.records import CaseResult

MAX_FP8_CHARTS = 24
"""Upper bound on FP8-state charts (largest sizes and loss spikes are chosen first)."""


@dataclass
class Chart:
    """A rendered chart: its file name, caption, and PNG bytes."""

    name: str
    title: str
    caption: str
    png: bytes

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode()


def fp8_selection(sources: list[Source], df: pd.DataFrame) -> tuple[list[tuple[Source, CaseResult, str]], int]:
    """Which cases get an FP8-state chart, and why; and how many recorded a state at all.

    The largest size of each workload (where FP8 matters and where scales
    drift), every case whose loss went above 1.25x its reference's, and every case
    with a flag. Ordered like the case table; at most MAX_FP8_CHARTS.
    """
    sizes = tables.size_order(df) if not df.empty else {}
    chosen, total = [], 0
    for src in sources:
        recs = [r for r in src.records if r.round_no == 0]
        with_state = [r for r in recs if r.fp8_state]
        total += len(with_state)
        largest: dict[str, float] = {}
        for r in with_state:
            key = sizes.get((r.workload, r.size), (0.0, 0.0))[0]  # FLOPs: the model's size
            largest[r.workload] = max(largest.get(r.workload, -math.inf), key)
        refs = {(r.workload, r.size): r for r in recs if r.verdict == "reference" and r.loss}
        for r in with_state:
            why = []
            if sizes.get((r.workload, r.size), (0.0, 0.0))[0] == largest[r.workload]:
                why.append("largest size")
            ref = refs.get((r.workload, r.size))
            if ref is not None and ref.loss and r.loss:  # refs holds only references with losses
                step = tables.loss_spike(r.loss.per_step, ref.loss.per_step,
                                         (r.parity.tolerance if r.parity else None) or 0.0)
                if step is not None:
                    why.append(f"loss above 1.25x the reference's at step {step}")
            if r.fp8_state and r.fp8_state.flags:  # with_state holds only records with a state
                why.append(f"{len(r.fp8_state.flags)} flag(s)")
            if why:
                chosen.append((src, r, "; ".join(why)))
    order = {cid: i for i, cid in enumerate(df["case_id"])} if not df.empty else {}
    chosen.sort(key=lambda t: order.get(t[1].case_id, len(order)))
    return chosen[:MAX_FP8_CHARTS], total


ChartJob = tuple[str, str, str, Callable[[], Any]]
"""(name, title, caption, a function drawing the Figure or returning None)."""


def chart_jobs(sources: list[Source], df: pd.DataFrame, cost: pd.DataFrame,
                chosen: list[tuple[Source, CaseResult, str]], why_df: pd.DataFrame | None = None) -> list[ChartJob]:
    """Every chart the report may show, in drawing order; none without a case."""
    if df.empty:
        return []
    multi = len(sources) > 1
    # Captions name CUDA graphs only where a case ran under them (never on a CPU run).
    graphs = bool(df["graphs"].any())
    # The loss chart first: it is the largest, and the pool hands jobs out in order.
    jobs: list[ChartJob] = [
        ("loss", "Loss curves", "Training loss at every step, warm-up included, one panel per mode family. "
         "Every mode starts from the same weights and sees the same batches; the black dashed curve is the "
         "reference mode and the grey band the band each curve was judged against.",
         lambda: charts.loss_curves(sources, df)),
        ("speedup", f"Speedup over {tables.BASELINE}", f"Each variant's median step time relative to eager "
         f"{tables.BASELINE} at the same size on the same machine; right of the dashed line is faster. "
         + ("Hatched: CUDA graphs. " if graphs else "")
         + f"Pale, labelled ✗: {charts.NOT_COUNTED} (or its FP8 proof is partial); it counts toward no speed claim.",
         lambda: charts.speedup(df)),
        ("step_time", "Train-step time", "Median of the timed steps (warm-up excluded); error bars span the "
         "25th to 75th percentile of the stored per-step samples. A panel whose values span more than 10× "
         "has a log axis.", lambda: charts.step_time(df)),
        ("memory", "Peak memory", "CUDA max allocated over warm-up and timed steps (reset per case); on a "
         "CPU, the case process's peak resident set. With CUDA graphs, activations live in the graph's "
         "private memory pool, set up before the reset: compare such cases by their peak reserved "
         "memory (in the case table), not by this chart.", lambda: charts.memory(df)),
        ("scaling", "Scaling with model size", "Per mode, the best variant at each size; x axis ordered by "
         "training FLOPs per step. " + ("Dashed: CUDA graphs. " if graphs else "") + "An FP8 line takes only the variants that count (passed "
         "loss parity, FP8 proof not partial): a size where none does leaves a gap.", lambda: charts.scaling(df)),
        ("comparison", "Machines side by side", "Median step time of the same case on each machine.",
         lambda: charts.comparison(df)),
    ]
    jobs.append(("phases", "Where the case time went", "Per mode, the case time of all its cases split into "
                 "phases: start-up (process and CUDA start; imports too when the worker started cold), "
                 "build (model, data, optimizer), warm-up (untimed steps: compilation, autotuning), "
                 "measured steps, profile, validate, and other (result hand-off, process exit).",
                 lambda: phases.chart(cost)))
    if why_df is not None and not why_df.empty:
        jobs.append(("why", "Where the step's time went", "GPU time per step by kernel category, from the profiled "
                     "extra steps (never the timed ones), and idle: the median timed step minus the union of kernel "
                     "time, when the GPU waits for the host to launch work. Kernels on concurrent streams count in "
                     f"each category. At most {why_mod.CHART_SIZES} sizes are drawn.",
                     lambda: why_mod.chart(why_df)))
    # One dict for the FP8-state charts: each drawing process (a forked copy of it) draws them into the
    # figures it keeps there; every job's figure is saved before the next job runs (pool.draw).
    reuse: dict[Any, Any] = {}
    for i, (src, rec, why) in enumerate(chosen):
        jobs.append((f"fp8_state_{i}", rec.case_id, why + (f"; {src.label}" if multi else ""),
                     functools.partial(charts.fp8_state, rec, note=why, reuse=reuse)))
    return jobs


def draw_charts(jobs: list[ChartJob]) -> dict[str, Any]:
    """Draw every job once; the context's chart entries (:func:`place_charts`)."""
    return place_charts(jobs, draw_all([job[3] for job in jobs]))


def place_charts(jobs: list[ChartJob], pngs: list[bytes | None]) -> dict[str, Any]:
    """The context's chart entries (main charts, the cost chart, FP8-state charts) from each job's PNG bytes."""
    drawn = [Chart(name, title, caption, png) for (name, title, caption, _), png in zip(jobs, pngs)
             if png is not None]
    return {
        "charts": [c for c in drawn if not c.name.startswith("fp8_state_") and c.name not in ("phases", "why")],
        "why_chart": next((c for c in drawn if c.name == "why"), None),
        "cost_chart": next((c for c in drawn if c.name == "phases"), None),
        "fp8_charts": [c for c in drawn if c.name.startswith("fp8_state_")],
    }
