"""What the harness cost: each case's time split into its phases.

A case's time (``duration_s``, from the moment the runner handed the case to
a worker until its record was written) is start-up, build, warm-up, measured
steps, profiling, validation, and the rest (writing the result, the process
ending, the runner recording it). Only the measured steps produce the numbers
the report is about; the rest is what the harness costs on the machine.
Imports a pre-started worker did while the previous case ran are in no case's
time; they are shown apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from tebench.schema.part import shown
from tebench.schema.records import Phases

def _phases() -> list[tuple[str, str, str]]:
    """(key, label, colour) of every phase the schema declares, then the rest of the case's time."""
    declared = [(name, meta["label"], meta["color"]) for name, meta in shown(Phases)]
    return [*declared, ("other_s", "other", "#d9d9d9")]


PHASES = _phases()


def frame(sources: list[Any]) -> pd.DataFrame:
    """One row per case record that ran (every round), its phases in seconds."""
    rows = []
    for src in sources:
        for rec in src.records:
            ph, duration = rec.phases, rec.duration_s
            if ph is None or duration is None:
                continue
            row = {"source": src.label, "mode": rec.mode, "case_id": rec.case_id}
            for key, _, _ in PHASES[:-1]:
                # Every key but "other_s" is a phase the schema declares: a field of Phases.
                row[key] = float(getattr(ph, key) or 0.0)
            known = sum(row[k] for k, _, _ in PHASES[:-1])
            row["other_s"] = max(0.0, float(duration) - known)
            row["duration_s"] = float(duration)
            row["launch"] = rec.launch.method if rec.launch else None
            row["preload_s"] = rec.launch.preload_s if rec.launch else None
            row["hidden_s"] = rec.launch.hidden(row["startup_s"]) if rec.launch else 0.0
            row["paused_s"] = (rec.launch.paused_s or 0.0) if rec.launch else 0.0
            row["settled"] = rec.warmup.settled if rec.warmup else None
            rows.append(row)
    return pd.DataFrame(rows)


def by_mode(df: pd.DataFrame) -> pd.DataFrame:
    """Seconds per phase summed over each (machine, mode), plus the measured share."""
    if df.empty:
        return df
    keys = [k for k, _, _ in PHASES]
    out = df.groupby(["source", "mode"], sort=False)[keys + ["duration_s"]].sum().reset_index()
    cases = df.groupby(["source", "mode"], sort=False).size().to_numpy()
    out.insert(2, "cases", cases)
    out["measured_share"] = out["measure_s"] / out["duration_s"].where(out["duration_s"] > 0)
    return out


def totals(df: pd.DataFrame) -> dict[str, Any]:
    """The whole run: case time, each phase's share, launch methods, pre-start imports kept off the clock."""
    if df.empty:
        return {}
    total = float(df["duration_s"].sum())
    prestarted = df[df["launch"] == "prestarted"]
    return {
        "cases": len(df),
        "case_time_s": total,
        "measured_share": float(df["measure_s"].sum()) / total if total else None,
        "prestarted": len(prestarted),
        "preload_s": float(prestarted["preload_s"].fillna(0).sum()),
        "preload_hidden_s": float(prestarted["hidden_s"].fillna(0).sum()),
        # Stopped workers' clocks run on: this much of preload_s (at most) was standing still.
        "preload_paused_s": float(prestarted["paused_s"].fillna(0).sum()),
        "startup_per_case_s": float(df["startup_s"].median()),
        "settled": int((df["settled"] == True).sum()),  # noqa: E712 (None is neither)
        "adaptive": int(df["settled"].notna().sum()),
    }


def chart(df: pd.DataFrame) -> Figure | None:
    """A stacked bar per (machine, mode): where the case time went."""
    table = by_mode(df)
    if table.empty:
        return None
    table = table.iloc[::-1]
    multi = table["source"].nunique() > 1
    labels = [f"{m} ({n})" + (f" · {s}" if multi else "") for s, m, n in
              zip(table["source"], table["mode"], table["cases"])]
    height = max(1.6, 0.32 * len(table) + 1.1)
    fig = Figure(figsize=(9.0, height))
    ax = fig.add_axes((0.26, 0.9 / height, 0.72, 1 - 1.45 / height))
    left = np.zeros(len(table))
    y = np.arange(len(table))
    for key, label, color in PHASES:
        values = table[key].to_numpy(dtype=float)
        ax.barh(y, values, left=left, color=color, edgecolor="black", linewidth=0.3, label=label)
        left += values
    ax.set_yticks(y, labels, fontsize=9)
    ax.set_xlabel("seconds of case time (summed over the cases of each mode; count in brackets)", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(ncols=len(PHASES), fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), frameon=False,
              handlelength=1.2, columnspacing=0.9)
    fig.suptitle("Where the case time went", fontsize=10, x=0.02, ha="left", y=0.995)
    return fig
