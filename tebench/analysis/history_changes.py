"""Step changes and drift in a history's series: where a case's step time moved, and how.

A series is one case's median step time per run on one device, oldest run first.
:func:`step_changes` finds level shifts in it (binary segmentation on medians),
tells a steady drift from a step, and holds back a change at the end that too few
runs follow yet. :func:`trends` cuts a history's rows into series and finds the
changes of each; the page draws them (:mod:`tebench.report.history_page`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass
class StepChange:
    """A shift in a series: from ``index`` on, the level moved from ``before`` to ``after``.

    ``kind`` is ``step`` (a jump between two flat levels) or ``drift`` (a steady
    slope over runs ``index`` .. ``end - 1``, better fit by a line than by two
    levels). ``awaiting`` > 0 marks a possible change at the end of the series
    that fewer than ``confirm`` runs follow yet: not reported as a change until
    that many more runs agree.
    """

    index: int
    before: float
    after: float
    kind: str = "step"
    end: int | None = None
    awaiting: int = 0

    @property
    def ratio(self) -> float:
        return self.after / self.before

    @property
    def label(self) -> str:
        if self.awaiting:
            return f"possible change, awaiting {self.awaiting} more run(s)"
        return self.kind


def _abs_cost(x: np.ndarray) -> float:
    return float(np.abs(x - np.median(x)).sum())


def _line_fit(x: np.ndarray) -> tuple[float, float, np.ndarray]:
    """A robust line (Theil-Sen slope, median intercept): its absolute-deviation cost, slope, residuals."""
    t = np.arange(x.size, dtype=float)
    i, j = np.triu_indices(x.size, 1)
    slope = float(np.median((x[j] - x[i]) / (t[j] - t[i])))
    resid = x - slope * t
    resid = resid - np.median(resid)
    return float(np.abs(resid).sum()), slope, resid


def step_changes(values: list[float], threshold: float = 0.05, min_side: int = 3,
                 depth: int = 3) -> list[StepChange]:
    """Find level shifts by binary segmentation on medians; tell drift from steps; hold back recent ones.

    Each segment is split where two levels fit it best; the split is kept when
    the medians on either side differ by more than ``threshold`` (relative)
    and by more than three times the noise (median absolute deviation) within
    the two sides, the two sides barely overlap, and the first runs after the
    split already sit at the new level. A segment that a straight line fits at
    least as well as two levels is a ``drift``, not a step. Each side needs
    ``min_side`` runs: a change fewer runs follow is returned with ``awaiting``
    set (a possible change), never placed at a guessed run.
    """
    v = np.asarray(values, dtype=float)
    found: list[StepChange] = []

    def search(lo: int, hi: int, level: int) -> None:
        if level > depth or hi - lo < 2 * min_side:
            return
        # The split that best explains the segment as two levels: least total
        # absolute deviation from each side's median.
        best, best_k = np.inf, None
        for k in range(lo + min_side, hi - min_side + 1):
            cost = _abs_cost(v[lo:k]) + _abs_cost(v[k:hi])
            if cost < best:
                best, best_k = cost, k
        if best_k is None:
            return
        segment = v[lo:hi]
        line_cost, slope, resid = _line_fit(segment)
        if line_cost <= best:
            # A straight line fits as well as two levels: a drift if the line moves far enough
            # (beyond the threshold and three times the noise around it, steadily), else nothing.
            total = slope * (segment.size - 1)
            noise = float(np.median(np.abs(resid))) * 1.4826
            i, j = np.triu_indices(segment.size, 1)
            steady = abs(float(np.sign(segment[j] - segment[i]).mean())) >= 0.6  # Kendall's tau
            start = float(np.median(segment[:min_side]))
            if abs(total) > threshold * start and abs(total) > 3 * noise and steady:
                found.append(StepChange(lo, start, float(np.median(segment[-min_side:])), "drift", hi))
            return
        left, right = v[lo:best_k], v[best_k:hi]
        a, b = float(np.median(left)), float(np.median(right))
        noise = np.median(np.abs(np.concatenate([left - a, right - b]))) * 1.4826
        # The chosen split flatters its own noise estimate, so also require the
        # two sides to barely overlap (rank separation, as in Mann-Whitney).
        above = (right[:, None] > left[None, :]).mean()
        separated = max(above, 1 - above) >= 0.95
        # The runs right after the split are at the new level, those right before at the old:
        # otherwise the change happened elsewhere and this index would misplace it.
        mid = (a + b) / 2
        crisp = (np.sign(right[:min_side] - mid) == np.sign(b - a)).all() and \
                (np.sign(left[-min_side:] - mid) == np.sign(a - b)).all()
        if not (abs(b / a - 1) > threshold and abs(b - a) > 3 * noise and separated and crisp):
            return
        found.append(StepChange(best_k, a, b))
        search(lo, best_k, level + 1)
        search(best_k, hi, level + 1)

    search(0, len(v), 1)
    found.sort(key=lambda s: s.index)
    last = found[-1] if found else None
    # A drift ending at the last run is still going on: no separate "possible change" after it.
    if last is not None and last.kind == "drift" and last.end == len(v):
        return found
    pending = _pending(v, last.index if last else 0, threshold, min_side)
    return found + ([pending] if pending else [])


def _pending(v: np.ndarray, start: int, threshold: float, min_side: int) -> StepChange | None:
    """The last 1 .. min_side-1 runs, when every one of them sits beyond threshold and noise on the
    same side of the level before them: a possible change that too few runs follow to confirm."""
    for t in range(min(min_side - 1, v.size - start - min_side), 0, -1):
        before, tail = v[start:v.size - t], v[v.size - t:]
        level = float(np.median(before))
        noise = float(np.median(np.abs(before - level))) * 1.4826
        rel = tail / level - 1
        if (np.abs(rel) > threshold).all() and (np.abs(tail - level) > 3 * noise).all() and \
                len(set(np.sign(rel))) == 1:
            return StepChange(v.size - t, level, float(np.median(tail)), "step", awaiting=min_side - t)
    return None


@dataclass
class Series:
    """One case's median step time per run on one device, oldest run first, and its changes.

    ``positions`` place each run among all runs of the history (oldest 0), so series with runs
    missing line up on one axis; ``group`` (workload/size) is the panel the series is drawn in.
    """

    device: str
    group: str
    case_id: str
    run_ids: list[str]
    created: list[str]
    positions: list[int]
    medians_ms: list[float]
    changes: list[StepChange]

    @property
    def variant(self) -> str:
        """The mode plus its options: the case id past workload and size (the whole id of one that has no such
        parts, which a results file edited by hand may hold)."""
        parts = self.case_id.split("/", 2)
        return parts[2] if len(parts) == 3 else self.case_id

    @property
    def mode(self) -> str:
        """The case's mode (its variant's first part), which picks its colour."""
        return self.variant.split("/", 1)[0]


def trends(df: pd.DataFrame, threshold: float = 0.05, confirm: int = 3) -> list[Series]:
    """Every case's series in ``df`` (rows of :func:`tebench.store.history.frame`) with its changes.

    A run's value is the median of its rounds' median step times, over the cases that passed
    (``ok``, measured). Series come panel by panel, (device, workload/size) in the order the rows
    first show them, then case by case within a panel; a change needs ``confirm`` runs after it.
    """
    ok = df[(df["status"] == "ok") & df["median_ms"].notna()]
    if ok.empty:
        return []
    ok = ok.groupby(["run_id", "created", "device", "case_id"], sort=False)["median_ms"].median().reset_index()
    ok["group"] = ok["case_id"].str.split("/").str[:2].str.join("/")
    run_order = {r: i for i, r in enumerate(dict.fromkeys(df["run_id"]))}
    out = []
    for (device, group), panel in ok.groupby(["device", "group"], sort=False):
        for case_id, cg in panel.groupby("case_id", sort=False):
            values = list(cg["median_ms"])
            out.append(Series(device, group, case_id, list(cg["run_id"]), list(cg["created"]),
                              [run_order[r] for r in cg["run_id"]], values,
                              step_changes(values, threshold, min_side=confirm)))
    return out


def change_rows(series: list[Series]) -> list[dict[str, Any]]:
    """One row per change of every series: where (device, case, run and its time), which kind, the
    levels before and after, and the relative change."""
    return [{"device": s.device, "case_id": s.case_id, "kind": change.label, "run_id": s.run_ids[change.index],
             "created": s.created[change.index], "before_ms": change.before, "after_ms": change.after,
             "change": change.ratio - 1}
            for s in series for change in s.changes]
