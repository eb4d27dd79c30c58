"""The report's first screen: per workload, one short row per size that answers "what should I use here?".

Each row names the fastest configuration that counts (:func:`tables.counts`: loss parity ``pass`` or the
reference, FP8 proof not partial), its speedup over eager PT-AMP and over PT-AMP+compile, the memory it
saves, its energy per token where NVML measured it, and its verdict. Everything else in the report (the
wide headline table, every variant, the charts) is detail below it.

The table is kept narrow on purpose: it must fit a 1,400 px page without scrolling and a GitHub PR
comment without wrapping, so it has few columns and short cells (:data:`MAX_COLUMNS`, :data:`MD_WIDTH`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Pick:
    """One row of the first screen, raw values: a (source, workload, size) and the fastest case of it that counts."""

    source: str
    workload: str
    size: str
    passed_over: str
    """Faster cases that did not count, in words (:func:`tables.faster_not_counted`); empty when none."""
    pick: str | None = None
    """The variant picked; None where no case of the size counts."""
    parity: str | None = None
    """Its verdict; ``timing only`` for a timing with no loss curve (a pytest-benchmark module)."""
    margin: float = math.nan
    """The share of the reference's final loss its pass certifies (NaN: none stated)."""
    speedup_vs_amp: float = math.nan
    speedup_vs_compile: float = math.nan
    noise: bool = False
    """This run cannot tell its lead over eager PT-AMP from noise (:func:`lead_is_noise`)."""
    noise_compile: bool = False
    """... nor its lead over PT-AMP+compile."""
    memory_change: float = math.nan
    """Its peak memory against PT-AMP's: −0.12 for 12% less."""
    mj_per_token: float = math.nan
    energy_change: float = math.nan
    """Its energy per token against PT-AMP's."""


def frame(df: pd.DataFrame) -> list[Pick]:
    """One :class:`Pick` per (source, workload, size) of the case table that has an ok single-process case, in the
    table's order."""
    rows: list[Pick] = []
    if df.empty:
        return rows
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
        where = Pick(str(source), str(workload), str(size), tables.faster_not_counted([(ok, best)], counted))
        if best is None:
            rows.append(where)
            continue
        verdict = best["parity"]
        memory = best["memory_vs_amp"] - 1.0 if pd.notna(best["memory_vs_amp"]) else math.nan
        mj = energy = math.nan
        if has_energy and pd.notna(best.get("tokens_per_j")):
            mj = 1000.0 / best["tokens_per_j"]
            if base is not None and pd.notna(base.get("tokens_per_j")):
                energy = base["tokens_per_j"] / best["tokens_per_j"] - 1.0
        rows.append(dataclasses.replace(
            where, pick=str(best["variant"]),
            parity=verdict if isinstance(verdict, str) and verdict else "timing only",
            margin=_number(best.get("parity_margin")), speedup_vs_amp=_number(best["speedup_vs_amp"]),
            speedup_vs_compile=_number(best["speedup_vs_compile"]), noise=lead_is_noise(best, base),
            noise_compile=bool(tables.within_noise(best, base_compiled, "speedup_vs_compile")),
            memory_change=_number(memory), mj_per_token=_number(mj), energy_change=_number(energy)))
    return rows


def _number(value: Any) -> float:
    """A table cell as a float: NaN for a missing one (None, NaN)."""
    return float(value) if isinstance(value, (int, float, np.number)) and pd.notna(value) else math.nan


def _speedup_cell(row: Pick, ratio: float, baseline: str, noise: bool) -> str:
    """×1.50; "×1.02 (noise)" where this run cannot tell the pick from that baseline; "=" where the pick is that
    baseline itself (a ratio of a case to itself says nothing)."""
    if row.pick == baseline:
        return "="
    text = tables.fmt(ratio, "x")
    return f"{text} (noise)" if noise and text != "–" else text


def _energy_cell(row: Pick) -> str:
    if not math.isfinite(row.mj_per_token):
        return "–"
    text = f"{row.mj_per_token:.3g}"
    if row.pick != tables.BASELINE and math.isfinite(row.energy_change):
        text += f" {change_text(row.energy_change)}"
    return text


def _verdict_cell(row: Pick) -> str:
    """"pass ±1.0%" (the margin the pass certifies, so that a wide pass never reads like a narrow one),
    "reference", "none passed" where no case of the size counts."""
    if row.pick is None:
        return "none passed"
    if row.parity == "pass" and math.isfinite(row.margin):
        return f"pass {tables.margin_pct(row.margin)}"
    return str(row.parity)


def display(rows: list[Pick], energy: bool) -> pd.DataFrame:
    """Rows as text, the columns of :data:`COLUMNS` (mJ/token only where ``energy``)."""
    out = pd.DataFrame({
        "size": [r.size for r in rows],
        "fastest passing": [r.pick or "–" for r in rows],
        "vs AMP": [_speedup_cell(r, r.speedup_vs_amp, tables.BASELINE, r.noise) for r in rows],
        "vs compile": [_speedup_cell(r, r.speedup_vs_compile, tables.COMPILED, r.noise_compile) for r in rows],
        "memory": ["=" if r.pick == tables.BASELINE else change_text(r.memory_change) for r in rows],
        "mJ/token": [_energy_cell(r) for r in rows],
        "verdict": [_verdict_cell(r) for r in rows],
    }, columns=list(COLUMNS))
    return out if energy else out.drop(columns=["mJ/token"])


def groups(df: pd.DataFrame, multi: bool) -> list[dict[str, Any]]:
    """The first screen: per (machine,) workload a title and its display table, in case-table order."""
    picked = frame(df)
    if not picked:
        return []
    energy = any(math.isfinite(r.mj_per_token) for r in picked)
    by_workload: dict[tuple[str, str], list[Pick]] = {}
    for r in picked:
        by_workload.setdefault((r.source, r.workload), []).append(r)
    out = []
    for (source, workload), rows in by_workload.items():
        timing_only = all(r.parity == "timing only" for r in rows)
        out.append({"title": f"{workload} on {source}" if multi else workload,
                    "subtitle": ("the fastest configuration, per size (timing only: no loss curve was recorded, so "
                                 "no parity verdict)" if timing_only else
                                 "the fastest configuration that passed loss parity, per size"),
                    "table": display(rows, energy),
                    "passed_over": [f"{r.size}: {r.passed_over}" for r in rows if r.passed_over]})
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
