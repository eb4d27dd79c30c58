"""Nightly history: results kept in SQLite, trends charted, step changes found.

``add`` stores a run's header and every case record (samples included) in an
SQLite database. It is idempotent (a run already stored is not duplicated; a
resumed run adds only its new cases) and safe when several jobs add at once
(one write transaction at a time, with a generous busy timeout; WAL journal).
``report`` renders trend charts per case and GPU model, marks step changes in
each series, and compares the latest run with the recent ones before it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tebench import compare, results

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created TEXT,
    added TEXT,
    device TEXT,
    matrix TEXT,
    git_commit TEXT,
    header_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cases (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    case_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    device TEXT,
    status TEXT,
    median_ms REAL,
    tokens_per_s REAL,
    memory_bytes REAL,
    final_loss REAL,
    parity TEXT,
    record_json TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, round)
);
CREATE INDEX IF NOT EXISTS cases_by_case ON cases(case_id, device);
"""
BUSY_TIMEOUT_S = 120.0


def connect(db: str | Path) -> sqlite3.Connection:
    """Open (and create) a history database."""
    conn = sqlite3.connect(str(db), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    conn.executescript(SCHEMA)
    return conn


@dataclass
class Added:
    """What ``add`` did."""

    run_id: str
    new_run: bool
    new_cases: int
    total_cases: int


def add(db: str | Path, path: str | Path) -> Added:
    """Store a results file in the database; adding the same run again changes nothing."""
    run = results.read(path)
    env = compare.environment(run)
    created = run.header.get("created") or ""
    with closing(connect(db)) as conn:
        conn.execute("BEGIN IMMEDIATE")  # one writer at a time; others wait (busy_timeout)
        try:
            cur = conn.execute(
                "INSERT OR IGNORE INTO runs VALUES (?,?,?,?,?,?,?)",
                (run.run_id, created, time.strftime("%Y-%m-%dT%H:%M:%S%z"), env["device"],
                 run.header.get("matrix", {}).get("name"), env.get("git_commit"), json.dumps(run.header)),
            )
            new_run = cur.rowcount == 1
            new_cases = 0
            for rec in run.latest().values():
                median = (rec.get("timing") or {}).get("stats", {}).get("median")
                cur = conn.execute(
                    "INSERT OR IGNORE INTO cases VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (run.run_id, rec["case_id"], rec.get("round", 0), (rec.get("device") or {}).get("name"),
                     rec["status"], median, (rec.get("throughput") or {}).get("tokens_per_s"),
                     results.peak_memory(rec),
                     (rec.get("loss") or {}).get("final"), (rec.get("parity") or {}).get("verdict"),
                     json.dumps(rec)),
                )
                new_cases += cur.rowcount
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        total = conn.execute("SELECT COUNT(*) FROM cases WHERE run_id=?", (run.run_id,)).fetchone()[0]
    return Added(run.run_id, new_run, new_cases, total)


def frame(db: str | Path) -> pd.DataFrame:
    """Every stored case row with its run's time and device, oldest run first."""
    with closing(connect(db)) as conn:
        df = pd.read_sql_query(
            "SELECT c.run_id, r.created, r.git_commit, c.case_id, c.round, COALESCE(c.device, r.device) AS device, "
            "c.status, c.median_ms, c.tokens_per_s, c.memory_bytes, c.final_loss, c.parity "
            "FROM cases c JOIN runs r USING (run_id) ORDER BY r.created, c.run_id, c.case_id, c.round", conn)
    return df


def records(db: str | Path, run_ids: list[str]) -> list[dict[str, Any]]:
    """The stored records of some runs."""
    if not run_ids:
        return []
    with closing(connect(db)) as conn:
        q = f"SELECT record_json FROM cases WHERE run_id IN ({','.join('?' * len(run_ids))})"
        return [json.loads(row[0]) for row in conn.execute(q, run_ids)]


@dataclass
class StepChange:
    """A shift in a series: from ``index`` on, the level moved from ``before`` to ``after``."""

    index: int
    before: float
    after: float

    @property
    def ratio(self) -> float:
        return self.after / self.before


def step_changes(values: list[float], threshold: float = 0.05, min_side: int = 3,
                 depth: int = 3) -> list[StepChange]:
    """Find level shifts by binary segmentation on medians.

    Each segment is split where two levels fit it best; the split is kept when
    the medians on either side differ by more than ``threshold`` (relative)
    and by more than three times the noise (median absolute deviation) within
    the two sides, and the two sides barely overlap; each side is searched again.
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
            left, right = v[lo:k], v[k:hi]
            cost = np.abs(left - np.median(left)).sum() + np.abs(right - np.median(right)).sum()
            if cost < best:
                best, best_k = cost, k
        if best_k is None:
            return
        left, right = v[lo:best_k], v[best_k:hi]
        a, b = float(np.median(left)), float(np.median(right))
        noise = np.median(np.abs(np.concatenate([left - a, right - b]))) * 1.4826
        # The chosen split flatters its own noise estimate, so also require the
        # two sides to barely overlap (rank separation, as in Mann-Whitney).
        above = (right[:, None] > left[None, :]).mean()
        separated = max(above, 1 - above) >= 0.95
        if abs(b / a - 1) > threshold and abs(b - a) > 3 * noise and separated:
            found.append(StepChange(best_k, a, b))
            search(lo, best_k, level + 1)
            search(best_k, hi, level + 1)

    search(0, len(v), 1)
    return sorted(found, key=lambda s: s.index)


def latest_vs_recent(db: str | Path, window: int = 5,
                     thresholds: dict[str, float] | None = None) -> tuple[list[compare.Delta], dict[str, Any]]:
    """The newest run of each device against the ``window`` runs of that device before it.

    The earlier runs' samples are pooled as rounds, so run-to-run variation is
    part of the noise a regression must exceed.
    """
    thr = {**compare.DEFAULT_THRESHOLDS, **(thresholds or {})}
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
        for case_id in sorted(set(head) & set(base)):
            deltas.append(compare._judge(case_id, device, compare._side(base[case_id]),
                                         compare._side(head[case_id]), thr))
    return deltas, info


def _by_case(recs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        out.setdefault(r["case_id"], []).append(r)
    return out


def trend_figure(df: pd.DataFrame, threshold: float = 0.05):
    """Median step time per run for every case, one panel per (device, workload/size); step changes marked."""
    from matplotlib.figure import Figure

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
            for change in step_changes(list(cg["median_ms"]), threshold):
                xc = x[change.index] - 0.5
                ax.axvline(xc, color=color(mode), linestyle=":", linewidth=1.2)
                ax.annotate(f"{change.ratio - 1:+.0%}", (xc, change.after), fontsize=7, color=color(mode))
                changes.append({"device": device, "case_id": case_id, "run_id": cg["run_id"].iloc[change.index],
                                "created": cg["created"].iloc[change.index], "before_ms": change.before,
                                "after_ms": change.after, "change": change.ratio - 1})
        ax.set_title(f"{group} — {device}", fontsize=10)
        ax.set_xlabel("run (oldest → newest)")
        ax.set_ylabel("median step time (ms)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("Trends: median step time per run (dotted: detected step change)")
    return fig, changes


def report(db: str | Path, out: str | Path, window: int = 5, thresholds: dict[str, float] | None = None) -> Path:
    """Render ``history.html`` and ``history.md`` (+ ``trends.png``) into ``out``."""
    import jinja2

    from tebench.report import Chart, html_table, md_escape, md_table, png_bytes, templates_dir

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    df = frame(db)
    fig, changes = trend_figure(df, (thresholds or {}).get("time", compare.DEFAULT_THRESHOLDS["time"]))
    chart = Chart("trends", "Trends", "", png_bytes(fig)) if fig is not None else None
    if chart:
        (out / "trends.png").write_bytes(chart.png)
    deltas, info = latest_vs_recent(db, window, thresholds)
    regress = pd.DataFrame([{"device": d.device, "case": d.case_id, "verdict": d.verdict,
                             "step time": "–" if d.time_ratio is None else f"{d.time_ratio - 1:+.1%}",
                             "why": "; ".join(d.why)} for d in deltas if d.verdict != "inconclusive"])
    runs = df.drop_duplicates("run_id")[["run_id", "created", "device", "git_commit"]] if not df.empty else df
    steps = pd.DataFrame(changes)
    if not steps.empty:
        steps["change"] = steps["change"].map(lambda v: f"{v:+.1%}")
        steps[["before_ms", "after_ms"]] = steps[["before_ms", "after_ms"]].round(3)
    ctx = {
        "db": str(db), "window": window, "info": info, "chart": chart,
        "n_regressions": sum(d.verdict in ("regressed", "status-changed") for d in deltas),
        "regressions": {"html": html_table(regress), "md": md_table(regress)},
        "steps": {"html": html_table(steps), "md": md_table(steps)},
        "runs": {"html": html_table(runs), "md": md_table(runs)},
        "method": compare.METHOD,
    }
    loader = jinja2.FileSystemLoader(str(templates_dir()))
    html_env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)
    md_env = jinja2.Environment(loader=loader, autoescape=False, undefined=jinja2.StrictUndefined)
    md_env.filters["md"] = md_escape
    (out / "history.html").write_text(html_env.get_template("history.html.j2").render(**ctx), encoding="utf-8")
    (out / "history.md").write_text(md_env.get_template("history.md.j2").render(**ctx), encoding="utf-8")
    return out
