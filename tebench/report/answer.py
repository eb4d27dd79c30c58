"""The report's first screen: per workload, one short row per size that answers "what should I use here?".

Each row names the fastest configuration that counts (:func:`tables.counts`: loss parity ``pass`` or the
reference, FP8 proof not partial), its speedup over eager PT-AMP and over PT-AMP+compile, the memory it
saves, its energy per token where NVML measured it, and its verdict. Everything else in the report (the
wide headline table, every variant, the charts) is detail below it.

The table is kept narrow on purpose: it must fit a 1,400 px page without scrolling and a GitHub PR
comment without wrapping, so it has few columns and short cells (:data:`MAX_COLUMNS`, :data:`MD_WIDTH`).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from tebench.report import tables

MAX_COLUMNS = 7
"""Columns of one first-screen table, the size included."""
MD_WIDTH = 116
"""Characters a first-screen Markdown row may take once rendered (cell text and padding). GitHub's comment column
at a 1,400 px window is about 870 px; its 14 px table text averages about 7.5 px a character: 116 characters."""
CELL_PAD = 4
"""Characters of rendered padding per cell (GitHub pads each cell 13 px a side, about 3.5 characters)."""
COLUMNS = ("size", "fastest passing", "vs AMP", "vs compile", "memory", "mJ/token", "verdict")
"""Short headings, explained once under the tables (:func:`legend`): each character counts toward :data:`MD_WIDTH`."""


def legend(energy: bool) -> str:
    """What the short headings and words of the first screen mean (``energy``: mJ/token is shown)."""
    return (f"vs AMP, vs compile: the speedup of its median step over eager {tables.BASELINE} and over "
            f"{tables.COMPILED} (\"=\": it is that baseline); memory: its peak against {tables.BASELINE}'s; "
            + (f"mJ/token: its energy per token (NVML, timed steps) and the change against {tables.BASELINE}'s; "
               if energy else "")
            + "(noise): its lead over that baseline is smaller than the steps' spread or the bootstrap interval of "
            "its speedup includes ×1, or its samples spread further than the ratio is from ×1, so this run cannot "
            "tell the two apart; verdict: loss parity, with what a pass certifies: in \"pass ±X%\", X is the "
            "largest loss difference from the reference the pass allows, as a share of the reference's final "
            "loss (the equivalence margin, or the band's half-width).")


def lead_is_noise(best: pd.Series, base: pd.Series | None) -> bool:
    """Whether one run cannot tell ``best`` from ``base`` (:func:`tables.within_noise`: the IQR rule, or the
    bootstrap interval of the speedup includes ×1). A speedup is claimed only when it can."""
    return bool(tables.within_noise(best, base))


def change_text(change: float) -> str:
    """A relative change, signed: "−12%", "+1.9%", "±0%" under 0.05% (never a negative "saving")."""
    return tables.fmt(change, "change")


def frame(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, workload, size) with the fastest counting case and what it buys; raw values.

    Columns: source, workload, size, pick, mode, speedup_vs_amp, speedup_vs_compile, memory_change (its peak
    against PT-AMP's, −0.12 for 12% less), mj_per_token, energy_change (per token against PT-AMP's), parity,
    noise (its lead cannot be told from noise), failed (cases of the size that failed or could not be judged).
    """
    rows: list[dict[str, Any]] = []
    if df.empty:
        return pd.DataFrame(rows)
    counted = tables.counts(df)
    has_energy = "tokens_per_j" in df
    for (source, workload, size), g in df.groupby(["source", "workload", "size"], sort=False):
        ok = g[(g["status"] == "ok") & g["median_ms"].notna() & (g["parallel"] == "single")]
        if ok.empty:
            continue
        good = ok[counted.loc[ok.index]]
        best = tables.fastest(good)
        amp = ok[(ok["variant"] == tables.BASELINE)]
        base = amp.iloc[0] if not amp.empty else None
        compiled = ok[(ok["variant"] == tables.COMPILED)]
        base_compiled = compiled.iloc[0] if not compiled.empty else None
        row: dict[str, Any] = {"source": source, "workload": workload, "size": size, "pick": None, "mode": None,
                               "speedup_vs_amp": np.nan, "speedup_vs_compile": np.nan, "memory_change": np.nan,
                               "mj_per_token": np.nan, "energy_change": np.nan, "parity": None, "noise": False,
                               "noise_compile": False, "margin": np.nan,
                               "failed": int(g["parity"].isin(["fail", "inconclusive"]).sum()),
                               "passed_over": tables.faster_not_counted([(ok, best)], counted)}
        if best is not None:
            verdict = best["parity"]
            # A pick that counts with no verdict is a timing with no loss curve (a pytest-benchmark module).
            row.update(pick=best["variant"], mode=best["mode"],
                       parity=verdict if isinstance(verdict, str) and verdict else "timing only",
                       speedup_vs_amp=best["speedup_vs_amp"], speedup_vs_compile=best["speedup_vs_compile"],
                       noise=lead_is_noise(best, base),
                       noise_compile=bool(tables.within_noise(best, base_compiled, "speedup_vs_compile")),
                       margin=best.get("parity_margin", np.nan))
            if pd.notna(best["memory_vs_amp"]):
                row["memory_change"] = best["memory_vs_amp"] - 1.0
            if has_energy and pd.notna(best.get("tokens_per_j")):
                row["mj_per_token"] = 1000.0 / best["tokens_per_j"]
                if base is not None and pd.notna(base.get("tokens_per_j")):
                    row["energy_change"] = base["tokens_per_j"] / best["tokens_per_j"] - 1.0
        rows.append(row)
    return pd.DataFrame(rows)


def _speedup_cell(row: pd.Series, column: str, baseline: str, noise: str) -> str:
    """×1.50; "×1.02 (noise)" where this run cannot tell the pick from that baseline; "=" where the pick is that
    baseline itself (a ratio of a case to itself says nothing)."""
    if row["pick"] == baseline:
        return "="
    text = tables.fmt(row[column], "x")
    return f"{text} (noise)" if row.get(noise) and text != "–" else text


def _energy_cell(row: pd.Series) -> str:
    if not math.isfinite(row["mj_per_token"]):
        return "–"
    text = f"{row['mj_per_token']:.3g}"
    if row["pick"] != tables.BASELINE and math.isfinite(row["energy_change"]):
        text += f" {change_text(row['energy_change'])}"
    return text


def _verdict_cell(row: pd.Series) -> str:
    """"pass ±1.0%" (the margin the pass certifies, so that a wide pass never reads like a narrow one),
    "reference", "none passed" where no case of the size counts."""
    if not isinstance(row["pick"], str):  # None, or NaN once pandas has held it
        return "none passed"
    margin = row.get("margin")
    if row["parity"] == "pass" and isinstance(margin, (int, float)) and math.isfinite(margin):
        return f"pass ±{margin:.1%}" if margin < 0.0995 else f"pass ±{margin:.0%}"
    return str(row["parity"])


def display(rows: pd.DataFrame, energy: bool) -> pd.DataFrame:
    """One workload's rows as text, the columns of :data:`COLUMNS` (mJ/token only where ``energy``)."""
    out = pd.DataFrame({
        "size": rows["size"].astype(str),
        "fastest passing": [r if isinstance(r, str) and r else "–" for r in rows["pick"]],
        "vs AMP": [_speedup_cell(r, "speedup_vs_amp", tables.BASELINE, "noise") for _, r in rows.iterrows()],
        "vs compile": [_speedup_cell(r, "speedup_vs_compile", tables.COMPILED, "noise_compile")
                       for _, r in rows.iterrows()],
        "memory": ["=" if r["pick"] == tables.BASELINE else change_text(r["memory_change"])
                   for _, r in rows.iterrows()],
        "mJ/token": [_energy_cell(r) for _, r in rows.iterrows()],
        "verdict": [_verdict_cell(r) for _, r in rows.iterrows()],
    })
    return out if energy else out.drop(columns=["mJ/token"])


def groups(df: pd.DataFrame, multi: bool) -> list[dict[str, Any]]:
    """The first screen: per (machine,) workload a title and its display table, in case-table order."""
    picked = frame(df)
    if picked.empty:
        return []
    energy = bool(picked["mj_per_token"].notna().any())
    out = []
    for (source, workload), rows in picked.groupby(["source", "workload"], sort=False):
        timing_only = bool(rows["parity"].eq("timing only").all())
        out.append({"title": f"{workload} on {source}" if multi else str(workload),
                    "subtitle": ("the fastest configuration, per size (timing only: no loss curve was recorded, so "
                                 "no parity verdict)" if timing_only else
                                 "the fastest configuration that passed loss parity, per size"),
                    "table": display(rows, energy),
                    "passed_over": [f"{r['size']}: {r['passed_over']}" for _, r in rows.iterrows()
                                    if r["passed_over"]]})
    return out


def md_width(table_md: str) -> int:
    """The widest a Markdown table renders, in characters: per column its longest cell (header included) plus
    :data:`CELL_PAD`, summed. Escapes (``\\|``, ``&lt;``) count as the one character they show."""
    rows = [line for line in table_md.splitlines() if line.startswith("|") and not line.startswith("|---")]
    widths: list[int] = []
    for line in rows:
        cells = [_shown(c.strip()) for c in _split_cells(line)]
        widths = [max(a, b) for a, b in zip(widths, cells)] + cells[len(widths):] if widths else cells
    return sum(w + CELL_PAD for w in widths)


def _split_cells(line: str) -> list[str]:
    """The cells of a Markdown table row, honouring escaped pipes."""
    cells, cell, i = [], "", 1
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            cell += line[i:i + 2]
            i += 2
            continue
        if line[i] == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += line[i]
        i += 1
    return cells


def _shown(cell: str) -> int:
    """How many characters a cell's Markdown shows (entities and backslash escapes are one each)."""
    return len(re.sub(r"&#?\w+;|\\.", "x", cell))
