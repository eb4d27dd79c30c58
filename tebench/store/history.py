"""Nightly history: results kept in SQLite, trends charted, step changes found.

``add`` stores a run's header and every case record (samples included) in an
SQLite database. It is idempotent (a run already stored is not duplicated; a
resumed run adds only its new cases) and safe when several jobs add at once
(one write transaction at a time, with a generous busy timeout; WAL journal).
``report`` renders trend charts per case and GPU model, marks step changes in
each series, and compares the latest run with the recent ones before it.
"""

from __future__ import annotations

import textwrap

import contextlib
import json
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from tebench.analysis import compare, stats
from tebench.store import run_records
from tebench.store import reader as results
from tebench.schema.version import RecordError
from tebench.schema.records import CaseResult
from tebench.store import bounded, history_db
from tebench.store.history_db import HistoryError


def connect(db: str | Path, create: bool = False) -> sqlite3.Connection:
    """Open tebench's history database ``db`` (made when ``create`` and missing); HistoryError for any
    other file, before anything is written to it (see :mod:`tebench.store.history_db`)."""
    return history_db.connect(db, create)


@contextlib.contextmanager
def _reading(db: str | Path) -> Iterator[sqlite3.Connection]:
    """A connection for queries: a database damaged past its header is refused naming the file."""
    try:
        with closing(connect(db)) as conn:
            yield conn
    except sqlite3.DatabaseError as exc:
        raise HistoryError(f"{db}: {history_db.describe_error(exc, 'cannot read it')}") from None
    except pd.errors.DatabaseError as exc:
        raise HistoryError(f"{db}: a damaged history database ({exc})") from None


@dataclass
class Added:
    """What ``add`` did."""

    run_id: str
    new_run: bool
    new_cases: int
    total_cases: int


_TEXT, _INTEGER, _REAL = "text", "integer", "real"
_RUN_COLUMNS = (("run_id", _TEXT), ("created", _TEXT), ("added", _TEXT), ("device", _TEXT), ("matrix", _TEXT),
                ("git_commit", _TEXT), ("header_json", _TEXT))
_CASE_COLUMNS = (("run_id", _TEXT), ("case_id", _TEXT), ("round", _INTEGER), ("device", _TEXT),
                 ("status", _TEXT), ("median_ms", _REAL), ("tokens_per_s", _REAL), ("memory_bytes", _REAL),
                 ("final_loss", _REAL), ("parity", _TEXT), ("record_json", _TEXT))
_FIELDS = {"created": "created", "matrix": "matrix.name", "git_commit": "env.git_commit", "device": "device",
           "run_id": "run_id", "case_id": "case_id", "round": "round", "status": "status",
           "median_ms": "timing.samples_ms (median)", "tokens_per_s": "throughput", "memory_bytes": "memory",
           "final_loss": "loss.final", "parity": "parity.verdict"}
"""Where in a record each column's value comes from, for messages."""


def _sql_problem(value: Any, kind: str) -> str | None:
    """Why ``value`` cannot be stored in a column of ``kind`` (None: it can)."""
    if value is None:
        return None
    if kind == _TEXT:
        return None if isinstance(value, str) else "must be a string"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "must be a number"
    if kind == _INTEGER and not isinstance(value, int):
        return "must be an integer"
    if isinstance(value, int) and not -2**63 <= value < 2**63:
        return "is beyond SQLite's 64-bit integers"
    return None


def _line_of(file: str, wanted: Any) -> int | None:
    """The line of ``file`` whose record ``wanted(record)`` picks (the last such line), if one does."""
    found = None
    try:
        for lineno, raw in bounded.iter_lines(file):
            if raw is None:
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict) and wanted(rec):
                found = lineno
                if rec.get("type") == "header":
                    break  # the run's header is its first
    except (OSError, bounded.InputError):
        return None
    return found


def _checked(row: tuple[Any, ...], columns: tuple[tuple[str, str], ...], file: str, wanted: Any,
             what: str) -> tuple[Any, ...]:
    """``row`` if SQLite can store every value as declared; else HistoryError naming the results file
    (``file:line`` where the record's line can be found), the field and the value."""
    for value, (column, kind) in zip(row, columns):
        why = _sql_problem(value, kind)
        if why:
            line = _line_of(file, wanted)
            shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
            raise HistoryError(f"{file}{f':{line}' if line else ''}: {what} [{_FIELDS.get(column, column)}] = "
                               f"{shown}: {why}; nothing of this file was stored")
    return row


def _rows(run: Any) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """The run's row and its cases' rows, every value checked before the database is opened."""
    env = compare.environment(run)
    header_row = (run.run_id, run.header.created or "", time.strftime("%Y-%m-%dT%H:%M:%S%z"), env["device"],
                  run.header.matrix_name, env.get("git_commit"), json.dumps(run.header.to_dict()))
    _checked(header_row, _RUN_COLUMNS, run.path, lambda r: r.get("type") == "header", "header")
    case_rows = []
    for rec in run.cases:
        rates = rec.rates(run.header.peak_tflops)
        row = (run.run_id, rec.case_id, rec.round_no, rec.device.name if rec.device else None,
               rec.status, rec.median_ms, rates.get("tokens_per_s"), rec.peak_memory,
               rec.final_loss, rec.verdict, json.dumps(rec.to_dict()))
        def wanted(r: dict, cid: str = rec.case_id, rnd: int = rec.round_no) -> bool:
            return r.get("type") == "case" and r.get("case_id") == cid and r.get("round", 0) == rnd
        case_rows.append(_checked(row, _CASE_COLUMNS, run.path, wanted, f"case {rec.case_id}"))
    return header_row, case_rows


def _check_one_run(run: Any) -> None:
    """HistoryError unless the file holds one run with a run id: the history is keyed by it.

    A header without one was stored under a null id and reported as "already stored" the next
    time; a file holding two runs (concatenated, or parts appended) would be stored under the
    first's id with the second's records standing in for the first's.
    """
    ids = list(dict.fromkeys(h.run_id for h in run.headers))
    if not all(isinstance(i, str) and i for i in ids):
        raise HistoryError(f"{run.path}: a header without a run id ([run_id] = {run.run_id!r}); "
                           "the history is keyed by it: nothing of this file was stored")
    if len(ids) > 1:
        raise HistoryError(f"{run.path}: holds {len(ids)} runs ({', '.join(ids[:5])}); the history stores one "
                           "run per file: split it into one file per run and add each (nothing was stored)")


def add(db: str | Path, path: str | Path) -> Added:
    """Store a results file in the database; adding the same run again changes nothing.

    Every value is checked before the database is opened: a results file that
    cannot be stored is refused (HistoryError naming the file, the field and the
    value) and the database is left as it was.
    """
    # Parity judged again over the run, as the report and --strict judge it.
    run = run_records.read(path)
    _check_one_run(run)
    header_row, case_rows = _rows(run)
    with closing(connect(db, create=True)) as conn:
        try:
            conn.execute("BEGIN IMMEDIATE")  # one writer at a time; others wait (busy_timeout)
            try:
                cur = conn.execute("INSERT OR IGNORE INTO runs VALUES (?,?,?,?,?,?,?)", header_row)
                new_run = cur.rowcount == 1
                new_cases = 0
                for row in case_rows:
                    new_cases += conn.execute("INSERT OR IGNORE INTO cases VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                                              row).rowcount
                conn.execute("COMMIT")
            except BaseException:
                # A failed COMMIT (a full disk) may have ended the transaction already: the error that
                # says why is the one raised, not "cannot rollback - no transaction is active".
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            total = conn.execute("SELECT COUNT(*) FROM cases WHERE run_id=?", (run.run_id,)).fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"{db}: {history_db.describe_error(exc, f'cannot add {path}')}") from None
    return Added(run.run_id, new_run, new_cases, total)


_FRAME_COLUMNS = (("run_id", _TEXT), ("created", _TEXT), ("git_commit", _TEXT), ("case_id", _TEXT),
                  ("round", _INTEGER), ("device", _TEXT), ("status", _TEXT), ("median_ms", _REAL),
                  ("tokens_per_s", _REAL), ("memory_bytes", _REAL), ("final_loss", _REAL), ("parity", _TEXT))
_REQUIRED = ("run_id", "case_id", "round")
UNKNOWN_DEVICE = "(device not recorded)"


def _row_problem(row: tuple[Any, ...]) -> str | None:
    """Why one stored row cannot be charted (None: it can): SQLite keeps any value in any column."""
    for value, (column, kind) in zip(row, _FRAME_COLUMNS):
        if value is None and column in _REQUIRED:
            return f"[{column}] is null"
        why = _sql_problem(value, kind)
        if why is None and isinstance(value, float) and kind == _REAL and not np.isfinite(value):
            why = "must be finite"
        if why is None and column == "case_id" and value.count("/") < 2:
            why = "not a case id (workload/size/mode...)"
        if why:
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            return f"[{column}] = {shown}: {why}"
    return None


def frame(db: str | Path) -> pd.DataFrame:
    """Every stored case row with its run's time and device, oldest run first.

    Each row is checked as results lines are: a row another program or a damaged write left with a
    value of the wrong type (a text median) is skipped with a warning naming its rowid, and a run
    without a device or time is shown under "(device not recorded)" and at the start, not dropped.
    """
    import warnings

    with _reading(db) as conn:
        rows = conn.execute(
            "SELECT c.rowid, c.run_id, r.created, r.git_commit, c.case_id, c.round, "
            "COALESCE(c.device, r.device) AS device, c.status, c.median_ms, c.tokens_per_s, c.memory_bytes, "
            "c.final_loss, c.parity FROM cases c JOIN runs r USING (run_id) "
            "ORDER BY COALESCE(r.created, ''), c.run_id, c.case_id, c.round").fetchall()
    good, problems = [], []
    for rowid, *row in rows:
        problem = _row_problem(tuple(row))
        if problem:
            problems.append(f"cases rowid {rowid}: {problem}")
        else:
            good.append(row)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        warnings.warn(f"{db}: skipped {len(problems)} unusable row(s): {shown}", stacklevel=2)
    df = pd.DataFrame(good, columns=[c for c, _ in _FRAME_COLUMNS])
    df["device"] = df["device"].fillna(UNKNOWN_DEVICE)
    df["created"] = df["created"].fillna("")
    for column, kind in _FRAME_COLUMNS:
        if kind == _REAL:
            df[column] = df[column].astype(float)
    return df


def records(db: str | Path, run_ids: list[str]) -> list[CaseResult]:
    """The stored records of some runs."""
    if not run_ids:
        return []
    import warnings

    with _reading(db) as conn:
        q = f"SELECT rowid, record_json FROM cases WHERE run_id IN ({','.join('?' * len(run_ids))})"
        rows = conn.execute(q, run_ids).fetchall()
    out, problems = [], []
    for rowid, text in rows:
        # The same checks as a results line: a damaged stored record is skipped by its rowid.
        try:
            record = results.loads(text) if isinstance(text, str) else None
            if not isinstance(record, dict):
                raise RecordError("record_json", text, "not a JSON object")
            record.setdefault("type", "case")
            results.check_record(record)
            out.append(CaseResult.from_dict(record, f"{db}: record"))
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
            problems.append(f"cases rowid {rowid}: {exc}")
    if problems:
        warnings.warn(f"{db}: skipped {len(problems)} damaged stored record(s): {'; '.join(problems[:3])}",
                      stacklevel=2)
    return out


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


def history_headline(deltas: list[compare.Delta], earlier: list[int]) -> str:
    """The history page's first line: the same words as ``compare`` (🟢 only when every judged case is
    unchanged, ⚪ when it cannot tell), against the number of earlier runs there really were."""
    counts = compare.tally(deltas)  # an improvement of a case that does not pass is not counted
    failing = sum(d.failing and d.counted for d in deltas)
    judged = sum(d.verdict not in compare.UNMEASURED for d in deltas)
    from tebench.report.compare_markdown import headline_icon  # the one rule; the history split moves this to report/

    icon = headline_icon(failing=bool(failing), concern=bool(counts["slower"] or any(d.failing for d in deltas)),
                         unknown=bool(counts["inconclusive"] or not judged))
    n = max(earlier) if earlier else 0
    against = ("no earlier run to compare with" if n == 0 else
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


def latest_vs_recent(db: str | Path, window: int = 5, thresholds: dict[str, float] | None = None,
                     opts: compare.Options | None = None) -> tuple[list[compare.Delta], dict[str, Any]]:
    """The newest run of each device against the ``window`` runs of that device before it.

    Each earlier run is one unit (its level: the median of its rounds' median
    step times). The latest run is judged against the *prediction* interval of
    one more run from those levels, so the latest run's own run-to-run variance
    is part of the noise a regression must exceed. p-values are adjusted across
    cases; fewer than ``min_rounds`` earlier runs leave step time inconclusive.
    """
    opts = opts or compare.Options(thresholds=dict(thresholds or {}))
    df = frame(db)
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
        head = _by_case(records(db, [latest]))
        base = _by_case(records(db, previous))
        items, tests = [], []
        for case_id in sorted(set(head) & set(base)):
            b, h = compare.side(base[case_id]), compare.side(head[case_id])
            items.append((case_id, b, h))
            tests.append(_run_level_test(base[case_id], h, opts) if h.median_ms else None)
        family = [i for i, t in enumerate(tests) if t is not None and t.enough]
        adjusted = dict(zip(family, stats.adjust_pvalues([tests[i].p for i in family], opts.correction)))
        for i, (case_id, b, h) in enumerate(items):
            deltas.append(compare.judge(case_id, device, b, h, opts, tests[i], adjusted.get(i)))
    return deltas, info


def _run_level_test(base_records: list[CaseResult], head: compare.Side,
                    opts: compare.Options) -> stats.TimeTest | None:
    by_run: dict[str, list[float]] = {}
    for r in base_records:
        if r.status == "ok" and len(r.samples_ms) >= opts.min_steps:
            by_run.setdefault(r.run_id or "", []).append(r.round_median_ms)
    levels = [float(np.median(v)) for v in by_run.values()]
    if not levels:
        return None
    if len(levels) < opts.min_rounds:
        ratio = head.median_ms / float(np.exp(np.mean(np.log(levels))))
        return stats.TimeTest(ratio, None, None, None, None, (len(levels), 1), False,
                              f"{len(levels)} earlier run(s); at least {opts.min_rounds} are needed to know "
                              "the run-to-run spread")
    return stats.prediction_test(levels, head.median_ms, confidence=1 - opts.alpha)


def _by_case(recs: list[CaseResult]) -> dict[str, list[CaseResult]]:
    out: dict[str, list[CaseResult]] = {}
    for r in recs:
        out.setdefault(r.case_id, []).append(r)
    return out


def trend_figure(df: pd.DataFrame, threshold: float = 0.05, confirm: int = 3):
    """Median step time per run for every case, one panel per (device, workload/size); step changes marked."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from tebench.report.charts import color

    ok = df[(df["status"] == "ok") & df["median_ms"].notna()]
    if ok.empty:
        return None, []
    ok = ok.groupby(["run_id", "created", "device", "case_id"], sort=False)["median_ms"].median().reset_index()
    ok["group"] = ok["case_id"].str.split("/").str[:2].str.join("/")
    run_order = {r: i for i, r in enumerate(dict.fromkeys(df["run_id"]))}
    panels = list(ok.groupby(["device", "group"], sort=False))
    cols = 2 if len(panels) > 1 else 1
    rows = int(np.ceil(len(panels) / cols))
    fig = Figure(figsize=(7.5 * cols, 3.6 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    changes = []
    for ax, ((device, group), g) in zip(axes, panels):
        for case_id, cg in g.groupby("case_id", sort=False):
            x = [run_order[r] for r in cg["run_id"]]
            mode = case_id.split("/")[2]
            ax.plot(x, cg["median_ms"], marker="o", markersize=3, color=color(mode), linewidth=1,
                    label=case_id.split("/", 2)[2])
            for change in step_changes(list(cg["median_ms"]), threshold, min_side=confirm):
                xc = x[change.index] - 0.5
                if change.kind == "drift":
                    ax.axvspan(xc, x[change.end - 1] + 0.5, color=color(mode), alpha=0.08)
                else:
                    ax.axvline(xc, color=color(mode), linestyle="--" if change.awaiting else ":", linewidth=1.2)
                ax.annotate(f"{change.ratio - 1:+.0%}" + ("?" if change.awaiting else ""), (xc, change.after),
                            fontsize=7, color=color(mode))
                changes.append({"device": device, "case_id": case_id, "kind": change.label,
                                "run_id": cg["run_id"].iloc[change.index],
                                "created": cg["created"].iloc[change.index], "before_ms": change.before,
                                "after_ms": change.after, "change": change.ratio - 1})
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
    return fig, changes


def report(db: str | Path, out: str | Path, window: int = 5, thresholds: dict[str, float] | None = None,
           confirm: int = 3) -> Path:
    """Render ``history.html`` and ``history.md`` (+ ``trends.png``) into ``out``."""
    import jinja2

    from tebench.report import Chart, html_finalize, html_table, md_escape, md_table, png_bytes, templates_dir

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    df = frame(db)
    opts = compare.Options(thresholds=dict(thresholds or {}))
    fig, changes = trend_figure(df, opts.thresholds["time"], confirm)
    chart = Chart("trends", "Trends", "", png_bytes(fig)) if fig is not None else None
    if chart:
        (out / "trends.png").write_bytes(chart.png)
    deltas, info = latest_vs_recent(db, window, opts=opts)
    regress = pd.DataFrame([{"device": d.device, "case": d.case_id,
                             "verdict": compare.verdict_text(d),
                             "step time": "–" if d.time_ratio is None else f"{d.time_ratio - 1:+.1%}",
                             "why": "; ".join(d.why + d.flags)}
                            for d in deltas if d.verdict not in ("inconclusive", "unchanged")])
    runs = df.drop_duplicates("run_id")[["run_id", "created", "device", "git_commit"]] if not df.empty else df
    steps = pd.DataFrame(changes)
    if not steps.empty:
        steps["change"] = steps["change"].map(lambda v: f"{v:+.1%}")
        steps[["before_ms", "after_ms"]] = steps[["before_ms", "after_ms"]].round(3)
    earlier = [len(v["baseline_runs"]) for v in info.values()]
    ctx = {
        "db": str(db), "window": window, "info": info, "chart": chart,
        "headline": history_headline(deltas, earlier),
        "n_regressions": sum(d.failing and d.counted for d in deltas),
        "regressions": {"html": html_table(regress), "md": md_table(regress)},
        "steps": {"html": html_table(steps), "md": md_table(steps)},
        "runs": {"html": html_table(runs), "md": md_table(runs)},
        "method": ("latest run: each earlier run is one unit (median of its rounds' median step times); the latest "
                   "run is judged against the prediction interval of one more run (its own run-to-run variance "
                   f"included), p-values adjusted across cases ({opts.correction}), alpha {opts.alpha:g}; at least "
                   f"{opts.min_rounds} earlier runs, else inconclusive. Trends: binary segmentation on run medians; "
                   f"a change is reported once {confirm} runs follow it (before that: possible change, awaiting "
                   "more runs); a segment a straight line fits as well as two levels is drift, not a step."),
    }
    loader = jinja2.FileSystemLoader(str(templates_dir()))
    html_env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                                  finalize=html_finalize)
    md_env = jinja2.Environment(loader=loader, autoescape=False, undefined=jinja2.StrictUndefined)
    md_env.filters["md"] = md_escape
    (out / "history.html").write_text(html_env.get_template("history.html.j2").render(**ctx), encoding="utf-8")
    (out / "history.md").write_text(md_env.get_template("history.md.j2").render(**ctx), encoding="utf-8")
    return out
