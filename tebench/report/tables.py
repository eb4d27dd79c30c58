"""Report tables, built with pandas from stored result records only.

:func:`case_frame` is the one table everything else derives from: a row per
(source, case), rounds pooled. Headline, crossover, distributed scaling and
cross-machine comparison are views of it.
"""

from __future__ import annotations

import dataclasses

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from tebench.plan import modes
from tebench.analysis import parity, stats
from tebench.schema import records as record
from tebench.analysis import judged_run
from tebench import workloads
from tebench.plan.modes import MODES
from tebench.plan.recipes import RECIPES
from tebench.report.load import Source
from tebench.report.rows import ENERGY_COLUMNS, AoFp8, CaseRow, HeadlineRow, headline_frame
from tebench.report.rows import frame as rows_frame

BASELINE = modes.baseline("amp")
COMPILED = modes.baseline("compile")
CPU_BOUND_BELOW = 0.5
"""A GPU busy less than half of the step is labelled launch-bound (the word the docs and `ab` use too)."""
STATUS_SEVERITY = judged_run.STATUS_SEVERITY
JUDGED = parity.JUDGED


def case_frame(sources: list[Source]) -> pd.DataFrame:
    """One row per (source, case id): rounds pooled, statistics recomputed from samples (:class:`judged_run.CaseRounds`)."""
    rows: list[CaseRow] = []
    for src in sources:
        for case_id, rounds in judged_run.by_case(src.records, src.header.peak_tflops).items():
            # The case as its newest round describes it; measured values from the last ok round.
            newest, last = rounds.records[-1], rounds.last
            summary = rounds.summary
            tp = rounds.throughput()
            # Loss parity from the round whose verdict speaks for the case (a failed round is never hidden).
            judged = rounds.judged
            par = judged.parity or record.Parity()
            val = judged.validation or record.Validation()
            busy = last.busy_fraction
            rows.append(CaseRow(
                source=src.label,
                workload=newest.workload,
                size=newest.size,
                mode=newest.mode,
                variant=newest.variant,
                case_id=case_id,
                recipe=newest.fp8.recipe if newest.fp8 else None,
                graphs=newest.graphs,
                fp8_weights=newest.fp8_weights,
                parallel=newest.parallel,
                nproc=newest.nproc,
                status=rounds.status,
                reason=rounds.reason,
                rounds=len(rounds.ok),
                median_ms=summary.median,
                iqr_ms=summary.iqr,
                p25_ms=summary.p25,
                p75_ms=summary.p75,
                min_ms=summary.min,
                max_ms=summary.max,
                samples=len(rounds.samples_ms),
                samples_ms=rounds.rounds_ms,
                round_medians_ms=rounds.round_medians_ms,
                tokens_per_s=tp.tokens_per_s,
                tflops=tp.tflops,
                mfu=tp.mfu,
                flops_per_step=tp.flops_per_step,
                memory_bytes=last.peak_memory,
                reserved_bytes=last.memory.peak_reserved_bytes if last.memory else None,
                memory_kind=last.memory.kind if last.memory else None,
                final_loss=judged.final_loss,
                parity=par.verdict,
                parity_rel_diff=par.rel_diff,
                parity_reason=note + par.reason if (note := rounds.parity_note) and par.reason else par.reason,
                curve_max_rel_dev=par.max_curve_rel_dev,
                curve_dev_step=par.max_curve_dev_step,
                reference_mode=par.reference_mode,
                reference_final=par.reference_final,
                parity_tolerance=par.tolerance,
                parity_margin=par.band_rel,
                fp8_proof=last.fp8_proof.verdict if last.fp8_proof is not None else None,
                gpu_busy=busy,
                bound=None if busy is None else ("launch-bound" if busy < CPU_BOUND_BELOW else "GPU-bound"),
                validation_metric=val.metric,
                validation=val.value,
                validation_verdict=par.validation_verdict,
                **_energy_columns(last.energy),
            ))
            if rounds.damaged and rounds.status == "ok":
                rows[-1] = _damaged(rows[-1], rounds.damaged)
    df = rows_frame(rows)
    if df.empty:
        return df
    # Runs without an energy reading (a CPU, older records) keep their tables as they were.
    df = df.drop(columns=[c for c in ENERGY_COLUMNS if df[c].isna().all()])
    return order_rows(_add_baselines(df))


INVALID = "invalid"
"""A case's status in the report where its record says ok but its step times are no measurement."""


def _damaged(row: CaseRow, why: str) -> CaseRow:
    """The row of a case whose step times are damaged: shown as invalid with why, its times left out (a step of
    0 ms made an infinite speedup), as `tebench compare` calls it invalid."""
    return dataclasses.replace(row, status=INVALID, reason=f"damaged record, not counted: {why}", median_ms=None,
                               iqr_ms=None, p25_ms=None, p75_ms=None, min_ms=None, max_ms=None, tokens_per_s=None,
                               tflops=None, mfu=None)


THROTTLE_SHARE = 0.05
"""A case whose timed steps ran under thermal or hardware slowdown for more than this share is flagged."""
POWER_CAP_SHARE = 0.5
"""... and one that ran at its power cap for more than this share (the clock was set by power, not silicon)."""


def _energy_columns(en: record.Energy | None) -> dict[str, Any]:
    """A case's energy figures for the table (NaN where it has no reading), and its throttle flag in words."""
    if en is None or en.energy_j is None:
        return {c: np.nan for c in ENERGY_COLUMNS}
    shares = en.reason_share or {}
    flags = [f"{name.replace('_', ' ')} {shares[name]:.0%}" for name in ("thermal", "hw_slowdown")
             if shares.get(name, 0) > THROTTLE_SHARE]
    if shares.get("power_cap", 0) > POWER_CAP_SHARE:
        flags.append(f"power cap {shares['power_cap']:.0%}" + (f" of {en.power_limit_w:.0f} W" if en.power_limit_w
                                                                else ""))
    return {"j_per_step": en.j_per_step, "tokens_per_j": en.tokens_per_j, "avg_power_w": en.avg_power_w,
            "power_cap_share": shares.get("power_cap", np.nan),
            "sm_clock_p50": (en.sm_clock_mhz or {}).get("p50", np.nan),
            "throttle": "; ".join(flags) or np.nan, "power_limit_w": en.power_limit_w}


def power_limits(df: pd.DataFrame) -> str:
    """Each machine's enforced power limit(s), in words ("" where none was read), and a warning when they differ."""
    if df.empty or "power_limit_w" not in df:
        return ""
    limits = {src: sorted({round(v) for v in g["power_limit_w"].dropna()}) for src, g in df.groupby("source", sort=False)}
    limits = {src: v for src, v in limits.items() if v}
    if not limits:
        return ""
    text = "; ".join(f"{src}: {', '.join(f'{v} W' for v in vals)}" for src, vals in limits.items())
    if len({tuple(v) for v in limits.values()}) > 1 or any(len(v) > 1 for v in limits.values()):
        text += ". Speed and energy at different power limits are not like for like"
    return "Power limit: " + text


def energy_sentences(df: pd.DataFrame) -> list[str]:
    """Per size with energy readings: how much energy per token the best counting FP8 case uses against PT-AMP."""
    if df.empty or "tokens_per_j" not in df:
        return []
    out = []
    for (source, workload, size), g in df.groupby(["source", "workload", "size"], sort=False):
        ok = g[counts(g) & g["tokens_per_j"].notna() & (g["parallel"] == "single")]
        base = ok[ok["variant"] == BASELINE]
        best = fastest(ok[ok["mode"].isin(modes.FP8_MODES)])
        if base.empty or best is None:
            continue
        b = base.iloc[0]
        change = b["tokens_per_j"] / best["tokens_per_j"] - 1.0  # energy per token, FP8 against PT-AMP
        words = f"{abs(change):.0%} {'less' if change < 0 else 'more'}"
        power = ""
        if pd.notna(best.get("avg_power_w")) and pd.notna(b.get("avg_power_w")):
            power = f"; average power {best['avg_power_w']:.0f} W against {b['avg_power_w']:.0f} W"
        out.append(f"{workload}/{size}: {best['variant']} uses {words} energy per token than {BASELINE} "
                   f"({1000 / best['tokens_per_j']:.3g} against {1000 / b['tokens_per_j']:.3g} mJ per token{power})"
                   + (f" ({source})" if df["source"].nunique() > 1 else ""))
    return out


def size_order(df: pd.DataFrame) -> dict[tuple[str, str], tuple[float, float]]:
    """A numeric model-size key per (workload, size): training FLOPs per step.

    A size with no finished case has no FLOPs; it falls back to the first
    number in its name ("d4096" -> 4096), so it still sorts among its peers
    instead of by its letters.
    """
    flops = df.groupby(["workload", "size"], sort=False)["flops_per_step"].max()
    keys = {}
    for (workload, size), value in flops.items():
        digits = re.search(r"\d+", str(size))
        number = float(digits.group()) if digits else math.inf
        # Equal FLOPs (sizes that differ in a setting, say lr warm-up w0/w8/w16): the number decides.
        keys[(workload, size)] = (float(value), number) if pd.notna(value) else (number, number)
    return keys


def _variant_key(row: pd.Series) -> tuple:
    recipe = row.get("recipe")
    recipes = list(RECIPES)
    return (bool(row["graphs"]), bool(row["fp8_weights"]), row.get("parallel") != "single",
            recipes.index(recipe) if recipe in recipes else (len(recipes) if recipe else -1), str(row["variant"]))


def order_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows ordered workload -> model size (numerically) -> mode (registry order) -> variant -> machine.

    Workloads keep the order the results first name them; a run's own order
    (which --devices and --resume shuffle) never decides where a row sits.
    """
    if df.empty:
        return df
    workloads = {w: i for i, w in enumerate(dict.fromkeys(df["workload"]))}
    sizes = size_order(df)
    modes = {m: i for i, m in enumerate(MODES)}
    sources = {s: i for i, s in enumerate(dict.fromkeys(df["source"]))}
    keys = [
        (workloads[r["workload"]], sizes[(r["workload"], r["size"])], str(r["size"]),
         modes.get(r["mode"], len(modes)), str(r["mode"]), _variant_key(r), sources[r["source"]])
        for _, r in df.iterrows()
    ]
    order = sorted(range(len(df)), key=keys.__getitem__)
    return df.iloc[order].reset_index(drop=True)


def _add_baselines(df: pd.DataFrame) -> pd.DataFrame:
    """Speedup and memory relative to PT-AMP (and PT-AMP+compile) of the same source, workload and size."""
    base = df[(df["mode"] == BASELINE) & ~df["graphs"] & (df["parallel"] == "single") & (df["status"] == "ok")]
    comp = df[(df["mode"] == COMPILED) & ~df["graphs"] & (df["parallel"] == "single") & (df["status"] == "ok")]
    key = ["source", "workload", "size"]
    # One baseline per key: a second PT-AMP at the same size (say, other recipe settings) must
    # not multiply the rows in the join; the first, in case-table order, is the baseline.
    base = base.drop_duplicates(key)
    comp = comp.drop_duplicates(key)
    b = base.set_index(key)[["median_ms", "memory_bytes"]].rename(
        columns={"median_ms": "amp_ms", "memory_bytes": "amp_mem"})
    c = comp.set_index(key)[["median_ms"]].rename(columns={"median_ms": "compile_ms"})
    df = df.join(b, on=key).join(c, on=key)
    ok = df["status"] == "ok"
    df["speedup_vs_amp"] = np.where(ok, judged_run.speedup(df["amp_ms"], df["median_ms"]), np.nan)
    df["speedup_vs_compile"] = np.where(ok, judged_run.speedup(df["compile_ms"], df["median_ms"]), np.nan)
    # A peak of 0 bytes is no reading (a damaged record): a share of it would be infinite.
    df["memory_vs_amp"] = np.where(ok & (df["amp_mem"] > 0) & (df["memory_bytes"] > 0),
                                   df["memory_bytes"] / df["amp_mem"], np.nan)
    return df


def _order_sizes(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(workload, size) pairs, smallest FLOPs first."""
    flops = df.groupby(["workload", "size"])["flops_per_step"].max().fillna(0)
    return list(flops.sort_values(kind="stable").index)


def headline(df: pd.DataFrame) -> pd.DataFrame:
    """Per source, workload and size: the fastest mode that counts (:func:`counts`), its speedup, memory, parity.

    "Fastest" and "best FP8" (TE's, and torchao's where it ran) are chosen among
    the cases that count only. A faster case that does not count (it failed or
    could not be judged for loss parity, or its GEMMs were not all FP8) is named
    in ``faster_not_passing`` beside them, with its speedup, verdict and loss
    difference; a size where no case counts keeps its row with no fastest.
    """
    rows: list[HeadlineRow] = []
    if df.empty:
        return headline_frame(rows)
    ao_ran = torchao_ran(df)
    counted = counts(df)
    for (source, workload, size), g in df.groupby(["source", "workload", "size"], sort=False):
        ok = g[(g["status"] == "ok") & g["median_ms"].notna() & (g["parallel"] == "single")]
        if ok.empty:
            continue
        good = ok[counted.loc[ok.index]]
        best = fastest(good)
        fp8 = good[good["mode"].isin(TE_FP8_MODES)]
        best_fp8 = fastest(fp8)
        amp = ok[ok["variant"] == BASELINE]
        # Each pick beside the fastest case of its pool that did not count, where that one is faster.
        picks = [(ok, best), (ok[ok["mode"].isin(TE_FP8_MODES)], best_fp8)]
        if ao_ran:
            ao = ok[ok["mode"].isin(AO_FP8_MODES)]
            picks.append((ao, fastest(ao[counted.loc[ao.index]])))
        memory = best["memory_vs_amp"] if best is not None and pd.notna(best["memory_vs_amp"]) else np.nan
        rows.append(HeadlineRow(
            source=source, workload=workload, size=size,
            fastest=best["variant"] if best is not None else None,
            step_ms=best["median_ms"] if best is not None else np.nan,
            speedup_vs_amp=best["speedup_vs_amp"] if best is not None else np.nan,
            speedup_vs_compile=best["speedup_vs_compile"] if best is not None else np.nan,
            memory_saving_vs_amp=1 - memory if pd.notna(memory) else np.nan,
            memory_change=memory - 1 if pd.notna(memory) else np.nan,
            faster_not_passing=faster_not_counted(picks, counted),
            best_fp8=best_fp8["variant"] if best_fp8 is not None else None,
            fp8_speedup_vs_amp=best_fp8["speedup_vs_amp"] if best_fp8 is not None else np.nan,
            noise=within_noise(best, amp.iloc[0] if not amp.empty else None) if best is not None else "",
            parity=verdict_text(g),
            not_ok=int((g["status"] != "ok").sum() - (g["status"] == "skipped").sum()),
            ao=_other_fp8(good, fp8, best_fp8, g) if ao_ran else None,
        ))
    return headline_frame(rows)


# One rule with compare's per-record one (analysis.parity.counts_for_speed): the same verdicts and proofs.
NOT_FP8_PROOFS = parity.NOT_FP8_PROOFS
COUNTING_VERDICTS = parity.SPEED_VERDICTS


def counts(df: pd.DataFrame) -> pd.Series:
    """Which cases may back a speed claim (headline, where FP8 pays, crossover, torchao against TE): True per row.

    A case counts when its status is ``ok`` and

    * its loss-parity verdict is ``reference`` (it is the reference) or ``pass``. ``fail`` and
      ``inconclusive`` never count: a speedup of a run that may train another model is no speedup,
      and an inconclusive verdict is not a pass. ``n/a`` counts only where the case is not judged by
      design: a data-parallel case (each rank trains on its own batch; the replica check stands in)
      or a timing-only case with no loss curve at all (a pytest-benchmark module timing, no verdict).
      A case that is ``n/a`` because no reference ran does not count: nothing vouched for it;
    * and its FP8 proof (``fp8_proof``) is neither ``partial`` nor ``no-fp8``: an FP8 figure must come
      from GEMMs that ran in FP8. ``unproven`` (no profile to tell) and no proof (not an FP8 mode) count.
    """
    if df.empty:
        return pd.Series(dtype=bool, index=df.index)
    verdict = df["parity"] if "parity" in df else pd.Series(None, index=df.index, dtype=object)
    parallel = df["parallel"] if "parallel" in df else pd.Series("single", index=df.index)
    nproc = df["nproc"] if "nproc" in df else pd.Series(1, index=df.index)
    # The same test as analysis.parity.judge uses to leave a data-parallel case unjudged.
    data_parallel = (parallel != "single") & (nproc.fillna(1) > 1)
    by_design = (verdict.isna() & ~data_parallel) | ((verdict == "n/a") & data_parallel)
    judged_ok = verdict.isin(COUNTING_VERDICTS) | by_design
    proof = df["fp8_proof"] if "fp8_proof" in df else pd.Series(None, index=df.index, dtype=object)
    return (df["status"] == "ok") & judged_ok & ~proof.isin(NOT_FP8_PROOFS)


def fastest(cases: pd.DataFrame) -> pd.Series | None:
    """The case with the lowest median step, or None for no case."""
    return cases.loc[cases["median_ms"].idxmin()] if not cases.empty else None


def not_counted_text(row: pd.Series) -> str:
    """A case that does not count, as a note: "TE-FP8/x ×1.44 (fail, final loss +6.2%)"."""
    speed = row.get("speedup_vs_amp")
    shown = fmt(speed, "x") if speed is not None and pd.notna(speed) else f"{fmt(row['median_ms'], 'ms')} ms/step"
    verdict = str(row.get("parity") or "not judged")
    # An inconclusive case was not judged different: its reason's first clause says why ("too early on the
    # curve", "on the edge of the margin"), so that "+126%" beside it does not read as a failure.
    why = [f"inconclusive: {short_reason(row.get('parity_reason'))}" if verdict == "inconclusive" else verdict]
    diff = row.get("parity_rel_diff")
    if diff is not None and pd.notna(diff):
        why.append(f"final loss {diff * 100:+.1f}%")
    if row.get("fp8_proof") in NOT_FP8_PROOFS:
        why.append(f"FP8 proof {row['fp8_proof']}")
    return f"{row['variant']} {shown} ({', '.join(why)})"


def faster_not_counted(picks: list[tuple[pd.DataFrame, pd.Series | None]], counted: pd.Series) -> str:
    """Per (pool, its pick among the counting cases): the pool's fastest case that does not count, where it is
    faster than the pick (or there is no pick), each named once; "" where none."""
    named: dict[str, str] = {}
    for pool, pick in picks:
        rest = pool[~counted.loc[pool.index]]
        if pick is not None:
            rest = rest[rest["median_ms"] < pick["median_ms"]]
        top = fastest(rest)
        if top is not None:
            named.setdefault(top["case_id"], not_counted_text(top))
    return "; ".join(named.values())


TE_FP8_MODES = tuple(m for m in modes.FP8_MODES if modes.fp8_library(m) == "te")
"""The report's FP8 columns are TE's, as they always were; torchao's get their own (``ao_*``)."""
AO_FP8_MODES = tuple(m for m in modes.FP8_MODES if modes.fp8_library(m) == "torchao")


def has_torchao(df: pd.DataFrame) -> bool:
    """Whether any case of the frame is a torchao FP8 mode, run or not (the report's words count them)."""
    return not df.empty and bool(df["mode"].isin(AO_FP8_MODES).any())


def torchao_ran(df: pd.DataFrame) -> bool:
    """Whether a torchao FP8 case finished: only then do the tables get torchao's columns and rows (a CPU
    run, where AO-FP8 is skipped, keeps TE's tables as they were)."""
    return not df.empty and bool((df["mode"].isin(AO_FP8_MODES) & (df["status"] == "ok")).any())


def _other_fp8(ok: pd.DataFrame, te: pd.DataFrame, best_te: pd.Series | None, group: pd.DataFrame) -> AoFp8 | None:
    """torchao's best FP8 at one size beside TE's, each with its parity verdict; None where no torchao case ran.

    ``ok``: the size's finished cases that count (:func:`counts`); ``te`` its TE-FP8 ones and ``best_te`` the
    fastest of those; ``group``: every case of the size (whether torchao was in the matrix at all).
    """
    if not group["mode"].isin(AO_FP8_MODES).any():
        return None
    ao = ok[ok["mode"].isin(AO_FP8_MODES)]
    te_parity = (best_te.get("parity") or None) if best_te is not None else None
    if ao.empty:
        # "ao_ran": torchao's cases were in the matrix at this size, and none counts (the sentence says so).
        return AoFp8(ao_ran=True, best_ao_fp8=None, ao_fp8_speedup_vs_amp=np.nan, ao_fp8_speedup_vs_compile=np.nan,
                     te_vs_ao=np.nan, te_parity=te_parity, ao_parity=None, te_vs_ao_passing=np.nan)
    best = ao.loc[ao["median_ms"].idxmin()]
    return AoFp8(ao_ran=True, best_ao_fp8=best["variant"], ao_fp8_speedup_vs_amp=best["speedup_vs_amp"],
                 ao_fp8_speedup_vs_compile=best["speedup_vs_compile"],
                 te_vs_ao=(best["median_ms"] / best_te["median_ms"]) if best_te is not None else np.nan,
                 te_parity=te_parity, ao_parity=best.get("parity") or None,
                 # The choice a user makes: a variant that trains as the reference does. ``ok`` holds only such
                 # variants now, so this equals te_vs_ao; kept as its own column for reports that show it.
                 te_vs_ao_passing=_fastest_passing(ao) / _fastest_passing(te))


def _fastest_passing(cases: pd.DataFrame) -> float:
    """The lowest median step of the cases that count (:func:`counts`: passed loss parity, FP8 proven); NaN
    where none does."""
    passed = cases[counts(cases)]
    return float(passed["median_ms"].min()) if not passed.empty else np.nan


NOISE_RESAMPLES = 400
"""Resamples of a headline speedup's bootstrap interval: enough to tell an interval that includes ×1 from one that
does not, cheap enough for every size of a report (the crossover uses as many)."""


def within_noise(best: pd.Series, base: pd.Series | None, column: str = "speedup_vs_amp") -> str:
    """"within noise" when one run cannot tell the fastest mode from the baseline, "" otherwise.

    Any rule says so: the lead (its log) is smaller than either one's interquartile spread (relative to
    its median) or either one's samples' spread (log of slowest/fastest, :func:`_sample_spread`), or the bootstrap
    interval of the speedup (:func:`speedup_interval`) includes ×1. The second
    is what keeps a CPU headline honest: a step time whose IQR is most of its median supports no ×7.
    """
    if base is None or best["variant"] == base["variant"]:
        return ""
    spreads = [r["iqr_ms"] / r["median_ms"] for r in (best, base)
               if pd.notna(r.get("iqr_ms")) and r.get("median_ms")]
    speedup = best.get(column)
    if not spreads or speedup is None or pd.isna(speedup) or speedup <= 0:
        return ""
    if abs(math.log(speedup)) < max(spreads + [_sample_spread(r) for r in (best, base)]):
        return "within noise"
    interval = speedup_interval(best, base)
    return "within noise" if interval is not None and interval[0] <= 1.0 <= interval[1] else ""


def _sample_spread(row: pd.Series) -> float:
    """log(slowest / fastest) of a case's stored step times, leaving out the single slowest and fastest where it
    has 20 or more (one collector pause must not make a GPU case's whole lead "noise"); 0 where it has none.

    The first screen flags a ratio whose distance from ×1 is within this: on a loaded CPU a baseline whose
    steps ranged 12-532 ms supports no ×43 (2026-12-04, merged smoke shards)."""
    rounds = row.get("samples_ms")
    if not isinstance(rounds, list):
        return 0.0
    values = np.sort(np.asarray([v for r in rounds for v in r], dtype=float))
    values = values[np.isfinite(values) & (values > 0)]
    if values.size >= 20:
        values = values[1:-1]
    if values.size < 2:
        return 0.0
    return float(math.log(values[-1] / values[0]))


def speedup_interval(best: pd.Series, base: pd.Series) -> tuple[float, float] | None:
    """The bootstrap interval of ``best``'s speedup over ``base`` (rounds resampled, then steps), or None where
    either has no stored samples."""
    if not _has_samples(best) or not _has_samples(base):
        return None
    _, lo, hi = stats.bootstrap_ratio(best["samples_ms"], base["samples_ms"], resamples=NOISE_RESAMPLES)
    return lo, hi


def _has_samples(row: pd.Series) -> bool:
    rounds = row.get("samples_ms")
    return isinstance(rounds, (list, tuple)) and any(len(r) for r in rounds)


NOISY_SPREAD = 1.0
"""A case whose steps' IQR exceeds this share of its median is flagged: its median says little."""


def noisy(df: pd.DataFrame) -> pd.Series:
    """Which finished cases' IQR exceeds their median (:data:`NOISY_SPREAD`): True per row."""
    if df.empty or "iqr_ms" not in df:
        return pd.Series(False, index=df.index)
    return (df["status"] == "ok") & (df["iqr_ms"] > NOISY_SPREAD * df["median_ms"])


def reason_text(value: Any) -> str | None:
    """A reason cell as text, None where it has none (a frame holds a missing text as NaN, which reads "nan")."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip():
        return None
    return str(value)


def short_reason(reason: Any, limit: int = 60) -> str:
    """The first clause of a parity reason: what a summary line can hold."""
    text = re.split(r"[:;(]", reason_text(reason) or "no reason given", maxsplit=1)[0].strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def verdict_counts(df: pd.DataFrame) -> dict[str, int]:
    """How many cases each judging verdict has; ``inconclusive`` is its own count, never a pass."""
    if df.empty or "parity" not in df:
        return {v: 0 for v in JUDGED}
    counts = df["parity"].value_counts()
    return {v: int(counts.get(v, 0)) for v in JUDGED}


def margin_pct(margin: float) -> str:
    """A pass's margin as the report shows it: "±1.0%", "±15%" (a share of the reference's final loss)."""
    return f"±{margin:.1%}" if margin < 0.0995 else f"±{margin:.0%}"


def pass_margins(df: pd.DataFrame) -> str:
    """The passing cases' margins, "±1.0%" or "±1.0–3.0%" ("" where none has one).

    The first screen gives it beside the count, so that "4 pass ±15%" never reads like "4 pass ±1.0%".
    """
    if df.empty or "parity" not in df or "parity_margin" not in df:
        return ""
    margins = df.loc[df["parity"] == "pass", "parity_margin"].dropna()
    if margins.empty:
        return ""
    low, high = margin_pct(float(margins.min())), margin_pct(float(margins.max()))
    return low if low == high else f"{low}–{high.lstrip('±')}"


def verdict_text(df: pd.DataFrame, reasons: bool = False) -> str:
    """Verdict counts such as "7 pass · 2 fail · 1 inconclusive", optionally with the inconclusives' reasons.

    With ``reasons`` (the first screen): the passes' margins, "7 pass ±1.0–3.0%", so that what they certify
    is read with them; "… 1 inconclusive (reference did not learn)", several reasons counted each. No judged
    case: "n/a".
    """
    counts = verdict_counts(df)
    if not any(counts.values()):
        return "n/a"
    parts = [f"{counts[v]} {v}" for v in JUDGED if counts[v]]
    margins = pass_margins(df) if reasons else ""
    if margins:
        parts[0] += f" {margins}"
    text = " · ".join(parts)
    if reasons and counts["inconclusive"]:
        why = df[df["parity"] == "inconclusive"]["parity_reason"].map(short_reason).value_counts()
        text += " (" + "; ".join(r if len(why) == 1 else f"{n}× {r}" for r, n in why.items()) + ")"
    return text


def fp8_pays(df: pd.DataFrame) -> pd.DataFrame:
    """Per machine, workload and size (smallest first): the best TE-FP8 variant that counts and its speedups.

    The text and bar view of "where FP8 pays": it needs no chart and no
    second size, so a PR comment shows it for any run that timed TE-FP8.
    Only cases that count (:func:`counts`) are candidates; where none of a
    size's FP8 cases counts, its row has no speedup (no bar) and a ``note``
    naming the fastest of them and why it does not count.
    """
    if df.empty:
        return pd.DataFrame()
    counted = counts(df)
    ok = df[(df["status"] == "ok") & (df["parallel"] == "single") & df["mode"].isin(modes.FP8_MODES)
            & df["speedup_vs_amp"].notna()]
    both = torchao_ran(df)
    rows = []
    for (source, workload, size), g in ok.groupby(["source", "workload", "size"], sort=False):
        # With torchao's cases beside TE's, one row per library: the comparison the user came for.
        for pool in ((g[g["mode"].isin(TE_FP8_MODES)], g[g["mode"].isin(AO_FP8_MODES)]) if both else (g,)):
            if pool.empty:
                continue
            good = pool[counted.loc[pool.index]]
            if good.empty:
                # A speedup no one may claim gets no bar; the row still says that the size was timed, and how.
                top = pool.loc[pool["speedup_vs_amp"].idxmax()]
                rows.append({"source": source, "workload": workload, "size": size, "best_fp8": None,
                             "speedup_vs_amp": np.nan, "speedup_vs_compile": np.nan, "graphs": bool(top["graphs"]),
                             "mode": top["mode"], "note": f"not counted: {not_counted_text(top)}"})
                continue
            best = good.loc[good["speedup_vs_amp"].idxmax()]
            rows.append({"source": source, "workload": workload, "size": size, "best_fp8": best["variant"],
                         "speedup_vs_amp": best["speedup_vs_amp"], "speedup_vs_compile": best["speedup_vs_compile"],
                         "graphs": bool(best["graphs"]), "mode": best["mode"], "note": ""})
    return pd.DataFrame(rows)


def text_bar(value: float, top: float, width: int = 28, mark: float | None = 1.0) -> str:
    """A bar of block characters, ``value / top`` of ``width`` long, with a '│' where ``mark`` falls."""
    if value is None or not math.isfinite(value) or top <= 0:
        return ""
    eighths = max(0, round(min(value, top) / top * width * 8))
    cells = ["█"] * (eighths // 8) + ([" ▏▎▍▌▋▊▉"[eighths % 8]] if eighths % 8 else [])
    cells += [" "] * (width - len(cells))
    if mark is not None and 0 < mark <= top:
        at = max(0, min(width - 1, round(mark / top * width) - 1))
        cells[at] = "│"  # inside a longer bar too: a notch where ×1.00 falls
    return "".join(cells).rstrip()


def parity_issues(df: pd.DataFrame) -> pd.DataFrame:
    """Every case judged ``fail`` or ``inconclusive``: failures first, each with its reason."""
    if df.empty or "parity" not in df:
        return pd.DataFrame()
    bad = df[df["parity"].isin(["fail", "inconclusive"])]
    return bad.sort_values("parity", key=lambda s: s.map({"fail": 0, "inconclusive": 1}), kind="stable")


def loss_spike(losses: list[float], reference: list[float], tolerance: float = 0.0) -> int | None:
    """The first step at which a loss curve rose clearly above its reference (a spike), or None.

    "Clearly": more than 25% and more than ``tolerance`` above the reference
    at the same step. Early bumps every mode shares (the reference's own
    included) are not spikes of the case.
    """
    for step, (value, ref) in enumerate(zip(losses, reference)):
        if math.isfinite(value) and math.isfinite(ref) and value > 1.25 * ref and value - ref > tolerance:
            return step
        if not math.isfinite(value):
            return step
    return None


def crossover(df: pd.DataFrame) -> pd.DataFrame:
    """Per source, workload and graphs setting: the smallest size at which TE-FP8 beats each baseline.

    Sizes are ordered by FLOPs per step. "Beats" compares the best TE-FP8
    variant that counts (:func:`counts`) with the baseline at the same size and
    CUDA-graphs setting, and holds only when the bootstrap interval of the
    speedup lies above 1. A size whose FP8 cases all fail to count is listed
    as "not counted" and can never be the crossover.
    """
    rows: list[dict[str, Any]] = []
    if df.empty:
        return pd.DataFrame(rows)
    single = df[(df["status"] == "ok") & (df["parallel"] == "single") & ~df["fp8_weights"]
                & (df["workload"].map(workloads.kind) == "model")]
    # FP8 cases that do not count (parity, FP8 proof) are kept to be named, never compared; the
    # baselines are what the speedups are measured against, as in every speedup column.
    single = single.assign(counts=counts(single) | ~single["mode"].isin(modes.FP8_MODES))
    libraries = (TE_FP8_MODES, AO_FP8_MODES) if torchao_ran(df) else (modes.FP8_MODES,)
    for source, sg in single.groupby("source", sort=False):
        for pool in libraries:
            rows.extend(_crossover_rows(source, sg, pool, labelled=len(libraries) > 1))
    return pd.DataFrame(rows)


def _crossover_rows(source: str, sg: pd.DataFrame, fp8_modes: tuple[str, ...], labelled: bool) -> list[dict]:
    """One machine's crossover rows for the FP8 modes ``fp8_modes`` (``labelled``: say which, in ``fp8``)."""
    rows: list[dict[str, Any]] = []
    for workload in sg["workload"].unique():
        sizes = [s for w, s in _order_sizes(sg[sg["workload"] == workload]) if w == workload]
        if len(sizes) < 2:
            continue
        for graphs in (False, True):
            g = sg[(sg["workload"] == workload) & (sg["graphs"] == graphs)]
            for baseline in (BASELINE, COMPILED):
                first, ratio, compared = None, None, []
                for size in sizes:
                    at = g[g["size"] == size]
                    fp8 = at[at["mode"].isin(fp8_modes)]
                    base = at[at["mode"] == baseline]
                    if fp8.empty or base.empty:
                        continue
                    if not fp8["counts"].any():
                        compared.append(f"{size}: not counted")
                        continue
                    fp8 = fp8[fp8["counts"]]
                    best = fp8.loc[fp8["median_ms"].idxmin()]
                    # "Beats" means faster beyond noise: the bootstrap interval of
                    # the step-time ratio must lie entirely above 1.
                    r, lo, _ = stats.bootstrap_ratio(best["samples_ms"], base.iloc[0]["samples_ms"],
                                                     resamples=400)
                    wins = lo > 1.0
                    compared.append(f"{size}: ×{r:.2f}" + ("" if wins or r < 1 else " (within noise)"))
                    if wins and first is None:
                        first, ratio = size, r
                if not compared:
                    continue
                rows.append({
                    "source": source, "workload": workload, "cuda_graphs": "on" if graphs else "off",
                    "baseline": baseline,
                    **({"fp8": " or ".join(fp8_modes)} if labelled else {}),
                    "fp8_first_faster_at": first or f"not reached (up to {sizes[-1]})",
                    "speedup_there": ratio,
                    "speedup_by_size": "; ".join(compared),
                })
    return rows


def _communication(kernels: record.Kernels | None, row: pd.Series) -> dict[str, Any]:
    """A data-parallel case's communication share of the step and how much of it compute hid (the
    profiled extra step's NCCL kernels); empty where the record has no such measurement (older runs)."""
    if kernels is None or kernels.communication_ms is None or not row["median_ms"]:
        return {}
    comm, exposed = kernels.communication_ms, kernels.communication_exposed_ms
    return {"communication_share": comm / row["median_ms"],
            "communication_overlapped": (1 - exposed / comm) if (comm and exposed is not None) else None}


def distributed(df: pd.DataFrame, sources: list[Source]) -> pd.DataFrame:
    """Data-parallel cases: per-rank and aggregate tokens/s, and efficiency against one GPU."""
    rows = []
    by_label = {s.label: s for s in sources}
    multi = df[df["parallel"] != "single"]
    for _, row in multi.iterrows():
        # One scan of the source's records per case, for both of its parts.
        records = [r for r in by_label[row["source"]].records if r.case_id == row["case_id"]]
        rec = next((r.distributed for r in records if r.distributed), None)
        kernels = next((r.kernels for r in records if r.kernels), None)
        single = df[(df["source"] == row["source"]) & (df["workload"] == row["workload"])
                    & (df["size"] == row["size"]) & (df["parallel"] == "single") & (df["status"] == "ok")
                    & (df["variant"] == row["variant"].rsplit("/", 1)[0])]
        one = float(single["tokens_per_s"].iloc[0]) if not single.empty else None
        agg = rec.aggregate_tokens_per_s if rec else None
        per_rank = ", ".join(f"{r.tokens_per_s:,.0f}" for r in rec.per_rank or []) if rec else ""
        sync = rec.replicas_in_sync if rec else None
        rows.append({
            "source": row["source"], "case_id": row["case_id"], "status": row["status"],
            "ranks": row["nproc"], "per_rank_tokens_per_s": per_rank, "aggregate_tokens_per_s": agg,
            "replicas_in_sync": {True: "yes", False: "NO", None: "–"}[sync],
            "rank0_final_loss": row["final_loss"],
            "one_gpu_tokens_per_s": one,
            "scaling_efficiency": agg / (row["nproc"] * one) if (agg and one) else None,
            **_communication(kernels, row),
        })
    return pd.DataFrame(rows)


PER_WATT = " tokens/J"
"""Suffix of the comparison's per-watt columns (a source's tokens per joule, and their ratio)."""


def comparison(df: pd.DataFrame) -> pd.DataFrame:
    """Side by side: median step time of each case on each source, and the ratio to the first.

    Where the sources measured energy, their tokens per joule too, and its ratio to the first: a
    power-capped GPU's speed is its work per joule times its power limit, so per-GPU figures from
    GPUs at different limits are not like for like, and per-watt ones are (:func:`power_limits`
    states each side's limit).
    """
    if df.empty or df["source"].nunique() < 2:
        return pd.DataFrame()
    ok = df[df["status"] == "ok"]
    labels = list(dict.fromkeys(df["source"]))
    pivot = ok.pivot_table(index="case_id", columns="source", values="median_ms", aggfunc="first")
    pivot = pivot.reindex(columns=[c for c in labels if c in pivot.columns])
    first = pivot.columns[0]
    for col in pivot.columns[1:]:
        pivot[f"{col} / {first}"] = pivot[col] / pivot[first]
    if "tokens_per_j" in ok and ok["tokens_per_j"].notna().any():
        energy = ok.pivot_table(index="case_id", columns="source", values="tokens_per_j", aggfunc="first")
        energy = energy.reindex(columns=[c for c in labels if c in energy.columns])
        for col in energy.columns:
            pivot[f"{col}{PER_WATT}"] = energy[col]
        if first in energy.columns:
            for col in energy.columns:
                if col != first:
                    pivot[f"{col} / {first}{PER_WATT}"] = energy[col] / energy[first]
    return pivot.reset_index()


def not_run(df: pd.DataFrame) -> pd.DataFrame:
    """Every case that did not finish ok, with its reason."""
    if df.empty:
        return df
    bad = df[df["status"] != "ok"][["source", "case_id", "status", "reason"]]
    order = {s: i for i, s in enumerate(STATUS_SEVERITY)}
    return bad.sort_values("status", key=lambda s: s.map(order), kind="stable")


def fmt(value: Any, kind: str = "") -> str:
    """Human formatting used by both HTML and Markdown."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if kind == "ms":
        return f"{value:.3g}" if value < 10 else f"{value:,.1f}"
    if isinstance(value, str) and kind:
        return value  # a word in a number column: "=" where a case is its own baseline
    if kind == "x":
        return f"×{value:.2f}"
    if kind == "change":
        # Signed, so that a column of changes never shows a negative "saving".
        if abs(value) < 0.0005:
            return "±0%"
        return f"{'−' if value < 0 else '+'}{abs(value) * 100:.{0 if abs(value) >= 0.095 else 1}f}%"
    if kind == "s":
        return f"{value:,.1f}"
    if kind == "pct":
        return f"{value * 100:.1f}%"
    if kind == "bytes":
        for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if abs(value) >= div:
                return f"{value / div:.2f} {unit}"
        return f"{value:.0f} B"
    if kind == "int":
        return f"{value:,.0f}"
    if kind == "loss":
        return f"{value:.4g}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


CASE_COLUMNS: list[tuple[str, str, str]] = [
    # (column, heading, format); the first column stays in view when the table scrolls sideways
    ("case_id", "case", ""),
    ("source", "machine", ""),
    ("status", "status", ""),
    ("median_ms", "step ms (median)", "ms"),
    ("iqr_ms", "IQR ms", "ms"),
    # Only where some case's IQR exceeds its median (:func:`noisy`): its median says little.
    ("spread", "noise", ""),
    ("rounds", "rounds", ""),
    ("speedup_vs_amp", f"vs {BASELINE}", "x"),
    ("speedup_vs_compile", f"vs {COMPILED}", "x"),
    ("tokens_per_s", "tokens/s", "int"),
    ("tflops", "TFLOP/s", ""),
    ("mfu", "MFU", "pct"),
    ("memory_bytes", "peak memory", "bytes"),
    ("reserved_bytes", "peak reserved", "bytes"),
    ("j_per_step", "J/step", ""),
    ("tokens_per_j", "tokens/J", "int"),
    ("avg_power_w", "power W", "int"),
    ("power_cap_share", "at power cap", "pct"),
    ("sm_clock_p50", "SM MHz (p50)", "int"),
    ("throttle", "throttled", ""),
    ("gpu_busy", "GPU busy", "pct"),
    ("final_loss", "final loss", "loss"),
    ("parity", "parity", ""),
    # The verdict's power: a pass within ±15% must not read like one within ±1% (issue #49).
    ("parity_margin", "parity margin ±", "pct"),
    ("parity_rel_diff", "Δ loss vs ref", "pct"),
    ("curve_max_rel_dev", "max curve Δ", "pct"),
    ("validation", "validation", "loss"),
    ("validation_verdict", "validation vs ref", ""),
]

PARITY_COLUMNS: list[tuple[str, str, str]] = [
    ("case_id", "case", ""),
    ("source", "machine", ""),
    ("parity", "verdict", ""),
    ("final_loss", "final loss", "loss"),
    ("reference_mode", "reference", ""),
    ("reference_final", "reference final", "loss"),
    ("parity_tolerance", "tolerance", "loss"),
    ("curve_max_rel_dev", "max curve Δ", "pct"),
    ("curve_dev_step", "at step", "int"),
    ("parity_reason", "why", ""),
]


def formatted(df: pd.DataFrame, columns: list[tuple[str, str, str]]) -> pd.DataFrame:
    """A display copy: chosen columns, headings, values formatted as text."""
    present = [(c, h, f) for c, h, f in columns if c in df.columns]
    out = pd.DataFrame({h: [fmt(v, f) for v in df[c]] for c, h, f in present})
    return out
