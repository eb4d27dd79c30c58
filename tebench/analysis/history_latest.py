"""The latest run of a history judged against the runs before it (the page's first line: :mod:`tebench.report.history_page`).

Each device's newest run is judged case by case against the ``window`` runs of
that device before it, with the regression rules of ``compare``
(:func:`tebench.analysis.compare.judge`), each earlier run counted as one unit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tebench.analysis import compare, stats
from tebench.schema.records import CaseResult
from tebench.store import history



def latest_vs_recent(db: str | Path, window: int = 5, thresholds: dict[str, float] | None = None,
                     opts: compare.Options | None = None,
                     df: pd.DataFrame | None = None) -> tuple[list[compare.Delta], dict[str, Any]]:
    """The newest run of each device against the ``window`` runs of that device before it.

    Each earlier run is one unit (its level: the median of its rounds' median
    step times). The latest run is judged against the *prediction* interval of
    one more run from those levels, so the latest run's own run-to-run variance
    is part of the noise a regression must exceed. p-values are adjusted across
    cases; fewer than ``min_rounds`` earlier runs leave step time inconclusive. ``df``: the
    database's rows as :func:`tebench.store.history.frame` read them, when the caller has them
    already (each unusable row is then warned about once); returns the verdicts and, per device,
    its latest run and the runs it was judged against.
    """
    opts = opts or compare.Options(thresholds=dict(thresholds or {}))
    df = history.frame(db) if df is None else df
    deltas: list[compare.Delta] = []
    info: dict[str, Any] = {}
    if df.empty:
        return deltas, info
    runs = df.drop_duplicates("run_id")[["run_id", "created", "device"]]
    for device, rg in runs.groupby("device", sort=False):
        ordered = list(rg["run_id"])
        latest, previous = ordered[-1], ordered[-1 - window:-1]
        info[device] = {"latest": latest, "baseline_runs": previous}
        if not previous:
            continue
        head = _by_case(history.records(db, [latest]))
        base = _by_case(history.records(db, previous))
        items, tests = [], []
        for case_id in sorted(set(head) & set(base)):
            h = compare.side(head[case_id])
            earlier = _same_benchmark(base[case_id], h)
            b = compare.side(earlier)
            items.append((case_id, b, h))
            tests.append(_run_level_test(earlier, h.median_ms, opts) if h.median_ms else None)
        family = [(i, t.p) for i, t in enumerate(tests) if t is not None and t.p is not None]  # those with enough data
        adjusted = dict(zip([i for i, _ in family], stats.adjust_pvalues([p for _, p in family], opts.correction)))
        for i, (case_id, b, h) in enumerate(items):
            deltas.append(compare.judge(case_id, device, b, h, opts, tests[i], adjusted.get(i)))
    return deltas, info


def _run_level_test(base_records: list[CaseResult], head_ms: float,
                    opts: compare.Options) -> stats.TimeTest | None:
    """The latest run's median step time ``head_ms`` against the earlier runs' levels (one per run),
    or None without an earlier level."""
    by_run: dict[str, list[float]] = {}
    for r in base_records:
        level = r.round_median_ms
        if r.status == "ok" and len(r.samples_ms) >= opts.min_steps and level is not None:
            by_run.setdefault(r.run_id or "", []).append(level)
    levels = [float(np.median(v)) for v in by_run.values()]
    if not levels:
        return None
    if len(levels) < opts.min_rounds:
        ratio = head_ms / float(np.exp(np.mean(np.log(levels))))
        return stats.TimeTest(ratio, None, None, None, None, (len(levels), 1), False,
                              f"{len(levels)} earlier run(s); at least {opts.min_rounds} are needed to know "
                              "the run-to-run spread")
    return stats.prediction_test(levels, head_ms, confidence=1 - opts.alpha)


def _same_benchmark(base_records: list[CaseResult], head: compare.Side) -> list[CaseResult]:
    """The earlier runs' records of a case that ran the latest run's settings; without any, one earlier run's
    (its settings then differ, and the case is judged not comparable). Pooled, runs of other settings (a matrix
    changed in between: another vocab, more steps) were one number of two benchmarks, judged invalid."""
    by_run: dict[str, list[CaseResult]] = {}
    for r in base_records:
        by_run.setdefault(r.run_id or "", []).append(r)
    same = [r for recs in by_run.values() if not compare.settings_differ(compare.side(recs), head) for r in recs]
    return same or list(by_run.values())[-1]


def _by_case(recs: list[CaseResult]) -> dict[str, list[CaseResult]]:
    """The records of each case id."""
    out: dict[str, list[CaseResult]] = {}
    for r in recs:
        out.setdefault(r.case_id, []).append(r)
    return out
