"""The context both report templates render: every table, sentence and chart, computed once."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pandas as pd

import tebench
from tebench.analysis import verdict_moves
from tebench.plan import modes
from tebench.plan.modes import FP8_MODES
from tebench.report import answer, charts, tables
from tebench.report import harness_cost as phases
from tebench.report import why as why_mod
from tebench.report.columns import (AO_FP8, BUSY_COLUMNS, COST_COLUMNS, CROSSOVER_BOTH_COLUMNS, CROSSOVER_COLUMNS,
                                    DIST_COLUMNS, FP8, HEADLINE_COLUMNS)
from tebench.report.figures import chart_jobs, fp8_selection, place_charts
from tebench.report.load import Source
from tebench.report.markup import aligned, html_table, md_table
from tebench.report.pool import Drawing
from tebench.report.run_info import cost_header, environment, reproduce

def sentence(row: pd.Series) -> str:
    """One headline row in words: the fastest case that counts, its speedups, memory and loss parity."""
    fmt = tables.fmt
    text = f"{row['workload']}/{row['size']} on {row['source']}: "
    if row.get("fastest"):
        text += f"fastest is {row['fastest']} at {fmt(row['step_ms'], 'ms')} ms/step"
    else:
        text += "no case counts (loss parity, FP8 proof)"
    if pd.notna(row["speedup_vs_amp"]):
        text += f" ({fmt(row['speedup_vs_amp'], 'x')} vs {tables.BASELINE}" + (
            ", within noise: the steps' spread is larger than the lead" if row.get("noise") else "") + ")"
    if row.get("best_fp8") and pd.notna(row["fp8_speedup_vs_amp"]):
        text += f"; best {FP8} ({row['best_fp8']}) is {fmt(row['fp8_speedup_vs_amp'], 'x')} vs {tables.BASELINE}"
    if row.get("best_ao_fp8") and pd.notna(row.get("ao_fp8_speedup_vs_amp")):
        text += (f"; best {AO_FP8} ({row['best_ao_fp8']}) is {fmt(row['ao_fp8_speedup_vs_amp'], 'x')} vs "
                 f"{tables.BASELINE} and {fmt(row['ao_fp8_speedup_vs_compile'], 'x')} vs {tables.COMPILED}, "
                 f"parity {row.get('ao_parity') or 'not judged'}")
        # Both picks count (tables.counts), so their ratio is the comparison among variants that count.
        if pd.notna(row.get("te_vs_ao")):
            text += f"; {FP8} is {fmt(row['te_vs_ao'], 'x')} vs {AO_FP8}"
        elif not row.get("best_fp8"):
            text += f"; no {FP8} variant counts here"
    elif pd.notna(row.get("ao_ran", False)) and bool(row.get("ao_ran", False)) and row.get("best_fp8"):
        # torchao ran at this size and none of its variants counts: name that library, not TE's.
        text += f"; no {AO_FP8} variant counts here"
    if row.get("faster_not_passing"):
        text += f"; passed over, not counted: {row['faster_not_passing']}"
    saving = row["memory_saving_vs_amp"]
    if pd.notna(saving) and abs(saving) >= 0.0005:
        text += f"; it uses {fmt(abs(saving), 'pct')} {'less' if saving > 0 else 'more'} memory than {tables.BASELINE}"
    return text + f"; loss parity: {row['parity']}."


def pays_bars(pays: pd.DataFrame, multi: bool) -> list[dict[str, Any]]:
    """Rows of the "where FP8 pays" bars: label, speedup, bar text and bar width (% of the widest)."""
    if pays.empty:
        return []
    peak = pays["speedup_vs_amp"].max()  # NaN where no size has a case that counts
    top = max(1.0, float(peak) if pd.notna(peak) else 1.0) * 1.05
    rows = []
    both = "mode" in pays and pays["mode"].map(modes.fp8_library).nunique() > 1
    for _, r in pays.iterrows():
        label = f"{r['workload']}/{r['size']}" + (f" on {r['source']}" if multi else "") + (
            f" {r['mode']}" if both else "")
        speedup = float(r["speedup_vs_amp"])
        # A size whose FP8 cases all failed to count (tables.counts) has no bar, only its note.
        note = r.get("note") if isinstance(r.get("note"), str) else ""
        variant = r["best_fp8"] if pd.notna(r["best_fp8"]) else "–"
        rows.append({"label": label, "variant": variant, "speedup": tables.fmt(speedup, "x"),
                     "vs_compile": tables.fmt(r["speedup_vs_compile"], "x"),
                     "bar": note if not math.isfinite(speedup) else tables.text_bar(speedup, top),
                     "width": round(100 * speedup / top, 1) if math.isfinite(speedup) else 0.0,
                     "one": round(100 / top, 1), "faster": bool(speedup > 1), "note": note})
    return rows


def speedup_bars(df: pd.DataFrame, multi: bool) -> list[dict[str, Any]]:
    """The speedup chart as text: one block per (machine, workload, size), one bar per variant."""
    ok = df[(df["status"] == "ok") & (df["parallel"] == "single") & df["speedup_vs_amp"].notna()] \
        if not df.empty else df
    if ok.empty:
        return []
    top = max(1.0, float(ok["speedup_vs_amp"].max())) * 1.05
    counted = tables.counts(ok)
    blocks = []
    for (source, workload, size), g in ok.groupby(["source", "workload", "size"], sort=False):
        # Every variant stays (the detail view); one that does not count is marked after its bar.
        lines = aligned([(r["variant"], tables.fmt(r["speedup_vs_amp"], "x"),
                           tables.text_bar(float(r["speedup_vs_amp"]), top)
                           + ("" if counted[i] else f"  ✗ {charts.not_counted_mark(r)}"))
                          for i, r in g.iterrows()])
        blocks.append({"title": f"{workload}/{size}" + (f" on {source}" if multi else ""), "lines": lines})
    return blocks


def both(frame: pd.DataFrame, columns: list[tuple[str, str, str]] | None, multi: bool) -> dict[str, Any]:
    """A table for both templates: HTML, Markdown and the formatted frame."""
    if columns and not multi:
        columns = [c for c in columns if c[0] != "source"]  # one machine: a column of one value
    shown = tables.formatted(frame, columns) if (columns and not frame.empty) else frame
    return {"html": html_table(shown), "md": md_table(shown), "frame": shown}


def _comparison_columns(comp: pd.DataFrame, labels: list[str]) -> list[tuple[str, str, str]] | None:
    """Headings and formats of :func:`tables.comparison`'s columns (``labels``: the sources, in order)."""
    if comp.empty:
        return None
    out = [("case_id", "case", "")]
    for c in comp.columns:
        if c == "case_id":
            continue
        per_watt = c.endswith(tables.PER_WATT)
        name = c[: -len(tables.PER_WATT)] if per_watt else c
        if name in labels:  # one source's own figure
            out.append((c, c if per_watt else f"{c} (ms)", "int" if per_watt else "ms"))
        else:  # a ratio to the first source
            out.append((c, c, "x"))
    return out


def _fp8_words(both: bool) -> dict[str, str]:
    """How the report names its FP8 comparison: TE's alone, or each library's best beside the other's."""
    if not both:
        return {"fp8_best": f"best {FP8} variant", "fp8_short": f"best {FP8}", "fp8_name": FP8}
    return {"fp8_best": f"best {FP8} and best {AO_FP8} (torchao) variant", "fp8_short": "best FP8 of each library",
            "fp8_name": "FP8"}


def parity_context(df: pd.DataFrame, multi: bool) -> dict[str, Any]:
    """The headline, loss-parity and where-FP8-pays parts of the context."""
    head = tables.headline(df)
    issues = tables.parity_issues(df)
    pays = pays_bars(tables.fp8_pays(df), multi)
    fp8_ran = not df.empty and (df["mode"].isin(FP8_MODES) & (df["status"] == "ok")).any()
    return {
        **answer_context(df, multi),
        "headline_sentences": [sentence(r) for _, r in head.iterrows()],
        # The not-counted column only where some size has such a case: most runs pass throughout.
        "headline": both(same_as_baseline(head, "fastest", [
            (tables.BASELINE, "speedup_vs_amp"), (tables.BASELINE, "memory_change"),
            (tables.COMPILED, "speedup_vs_compile")]), [c for c in HEADLINE_COLUMNS if c[0] != "faster_not_passing"
                                 or (not head.empty and head["faster_not_passing"].astype(bool).any())], multi),
        "verdict_line": tables.verdict_text(df, reasons=True),
        "verdict_counts": tables.verdict_counts(df),
        "pass_margins": tables.pass_margins(df),
        "parity_issues": [{"case": r["case_id"], "source": r["source"], "verdict": r["parity"],
                           "reason": tables.reason_text(r["parity_reason"]) or "no reason recorded"} for _, r in issues.iterrows()],
        "parity_table": both(issues, tables.PARITY_COLUMNS, multi),
        "pays": pays,
        "pays_text": aligned([(r["label"], r["speedup"], r["bar"]) for r in pays]),
        "fp8_ran": bool(fp8_ran),
        **_fp8_words(tables.has_torchao(df)),
        "fp8_cases": int(df["mode"].isin(FP8_MODES).sum()) if not df.empty else 0,
        # Cases that ran (not skipped): where every FP8 case was skipped (no GPU), "no case finished with a
        # baseline" would blame the baseline.
        "fp8_attempted": int((df["mode"].isin(FP8_MODES) & (df["status"] != "skipped")).sum()) if not df.empty else 0,
        "speedup_text": speedup_bars(df, multi),
        "energy_sentences": tables.energy_sentences(df),
        "power_limits": tables.power_limits(df),
    }


def moved_context(sources: list[Source]) -> dict[str, Any]:
    """The cases whose verdict differs between the sources (:func:`tebench.analysis.verdict_moves.moved`), and how
    many were judged in more than one with the same settings."""
    common, moved = verdict_moves.moved([(src.label, src.records) for src in sources])
    return {"judged_in_several": common,
            "moved_verdicts": [{"case": m.case_id, "verdicts": " · ".join(f"{v} ({src})" for src, v in m.verdicts)}
                               for m in moved]}


def answer_context(df: pd.DataFrame, multi: bool) -> dict[str, Any]:
    """The first screen's tables (one per workload) for both templates, and the legend under them."""
    groups = answer.groups(df, multi)
    energy = any("mJ/token" in g["table"].columns for g in groups)
    return {"answer": [{"title": g["title"], "subtitle": g["subtitle"], "html": html_table(g["table"], "answer"),
                        "md": md_table(g["table"]),
                        "passed_over": g["passed_over"]} for g in groups],
            "answer_legend": answer.legend(energy)}


def same_as_baseline(frame: pd.DataFrame, name: str, pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """A display copy where a row that *is* a baseline shows "=" in that baseline's columns, not "×1.00"
    and "±0%": a case against itself says nothing. ``name``: the column naming the row's variant;
    ``pairs``: (baseline variant, its column)."""
    if frame.empty or name not in frame:
        return frame
    shown = frame.copy()
    for baseline, column in pairs:
        if column in shown:
            shown[column] = shown[column].astype(object)
            shown.loc[shown[name] == baseline, column] = "="
    return shown


def table_context(df: pd.DataFrame, sources: list[Source], multi: bool, cost: pd.DataFrame) -> dict[str, Any]:
    """The case, GPU-busy, crossover, multi-GPU, comparison, not-run and cost tables."""
    has_busy = not df.empty and df["gpu_busy"].notna().any()
    busy = df[df["gpu_busy"].notna()] if has_busy else df.iloc[0:0]
    dist = tables.distributed(df, sources) if not df.empty else pd.DataFrame()
    cross = tables.crossover(df)
    comp = tables.comparison(df)
    not_run = tables.not_run(df)
    flagged = tables.noisy(df)
    shown = same_as_baseline(df.assign(spread=flagged.map({True: "IQR > median", False: ""})), "variant",
                              [(tables.BASELINE, "speedup_vs_amp"), (tables.COMPILED, "speedup_vs_compile")])
    columns = [c for c in tables.CASE_COLUMNS if (has_busy or c[0] != "gpu_busy")
               and (flagged.any() or c[0] != "spread")]
    return {
        "cases": both(shown, columns, multi),
        "n_noisy": int(flagged.sum()),
        "n_cases": len(df),
        "status_counts": df["status"].value_counts().to_dict() if not df.empty else {},
        "has_busy": bool(has_busy),
        "busy": both(busy, BUSY_COLUMNS, multi),
        "cpu_bound": int((busy["bound"] == "launch-bound").sum()) if not busy.empty else 0,
        "crossover": both(cross, CROSSOVER_BOTH_COLUMNS if "fp8" in cross.columns else CROSSOVER_COLUMNS, multi),
        "has_crossover": not cross.empty,
        "distributed": both(dist, DIST_COLUMNS, multi),
        "has_distributed": not dist.empty,
        "comparison": both(comp, _comparison_columns(comp, list(dict.fromkeys(df["source"])) if not df.empty else []), multi),
        "has_comparison": not comp.empty,
        "not_run": both(not_run, [("case_id", "case", ""), ("source", "machine", ""), ("status", "status", ""),
                                   ("reason", "reason", "")], multi),
        "n_not_run": len(not_run),
        "cost": both(phases.by_mode(cost), COST_COLUMNS, multi),
        "cost_totals": phases.totals(cost),
        "cost_header": [cost_header(s) for s in sources],
    }


def why_context(why_df: pd.DataFrame, multi: bool, df: pd.DataFrame) -> dict[str, Any]:
    """The "why" section: a sentence per size, the time breakdown and memory tables (CUDA records with kernels).

    ``df``, the case frame, gives the sentences each case's loss-parity verdict: they pick among the cases
    that count, as the headline does."""
    if why_df.empty:
        return {"has_why": False}
    mem = why_df[why_df["mem_peak"].notna()]
    return {
        "has_why": True,
        "why_frame": why_df,
        "why_sentences": why_mod.sentences(why_mod.with_parity(why_df, df)),
        "why_time": both(why_df, why_mod.time_columns(why_df), multi),
        "why_memory": both(mem, why_mod.MEMORY_COLUMNS, multi),
        "has_why_memory": not mem.empty,
        "why_unproven": [r["case_id"] for _, r in why_df.iterrows() if r["fp8_proof"] in ("unproven", "no-fp8")],
    }


def _matrix_name(src: Source) -> str:
    """The name of the matrix a source ran, "results" where its header names none."""
    name = src.header.matrix_name
    return "results" if name is None else name


def build_context(sources: list[Source], out: Path, assets_url: str | None = None) -> dict[str, Any]:
    """Everything both templates show, computed once (each chart drawn once, used by HTML and Markdown)."""
    df = tables.case_frame(sources)
    multi = len(sources) > 1
    chosen, fp8_total = fp8_selection(sources, df)
    cost = phases.frame(sources)
    why_df = why_mod.frame(sources)
    jobs = chart_jobs(sources, df, cost, chosen, why_df)
    # The charts are drawn in other processes while this one builds the tables (pool.Drawing).
    with Drawing([job[3] for job in jobs]) as drawing:
        text = {**parity_context(df, multi), **moved_context(sources), **table_context(df, sources, multi, cost),
                **why_context(why_df, multi, df)}
        drawn = place_charts(jobs, drawing.result())
    return {
        "title": ", ".join(dict.fromkeys(_matrix_name(s) for s in sources)),
        "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "tebench_version": tebench.__version__,
        "sources": [{"label": s.label, "kind": s.kind, "notes": s.notes, "env": environment(s),
                     "reproduce": reproduce(s), "matrix": s.header.matrix.data if s.header.matrix is not None else None}
                    for s in sources],
        "multi": multi,
        "cpu_loads": [f"{s.label}: {s.header.load_average[0]:.2f}"
                      + (f" on {n} CPUs" if (n := s.env.cpu_count) else "")
                      for s in sources if s.kind == "tebench" and s.header.load_average],
        "cpu_only": bool(sources) and all(s.header.env is not None and s.env.device_type == "cpu" for s in sources
                                          if s.kind == "tebench") and any(s.kind == "tebench" for s in sources),
        "envs_differ": len({(s.device, s.env.torch, s.env.te, s.env.cuda)
                            for s in sources}) > 1,
        **text,
        **drawn,
        "fp8_total": fp8_total,
        "fp8_flags": [(s.label, r.case_id, flag) for s in sources for r in s.records
                      if r.fp8_state is not None for flag in r.fp8_state.flags or []],
        "assets_url": assets_url.rstrip("/") + "/" if assets_url else None,
        "md_note": None,
        "frame": df,
    }
