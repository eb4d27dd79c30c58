"""The declared rows of the report's tables: each column of the case table and of the headline, once, typed.

:class:`CaseRow` is one row of the case table (:func:`tebench.report.tables.case_frame`), from which every
other table, chart and the first screen derive; :class:`Baselines` the columns that table adds by joining
each case to its size's PT-AMP and PT-AMP+compile, and :class:`CaseMarks` those its display adds;
:class:`HeadlineRow` one row of the headline table
(:func:`tebench.report.tables.headline`), with :class:`AoFp8` the torchao columns it has where torchao's cases
were in the matrix. The tables stay pandas frames (grouping, joining, sorting are what pandas does well),
but a row is built by naming its fields, which a type checker sees, and a frame's columns are the fields'
names in declaration order (:func:`frame`): a column spec that names no declared column fails a test
(``tests/unit/report/test_rows.py``), not a report.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence

import pandas as pd

NAN = math.nan


@dataclass(frozen=True)
class CaseRow:
    """One (source, case) of the case table: rounds pooled, statistics from the samples (judged_run.CaseRounds)."""

    source: str
    workload: str
    size: str
    mode: str
    variant: str
    case_id: str
    recipe: str | None
    graphs: bool
    fp8_weights: bool
    parallel: str
    nproc: int
    status: str
    reason: str | None
    rounds: int
    """Rounds that finished ok."""
    median_ms: float | None
    iqr_ms: float | None
    p25_ms: float | None
    p75_ms: float | None
    min_ms: float | None
    max_ms: float | None
    samples: int
    samples_ms: list[list[float]]
    """Each ok round's step samples."""
    round_medians_ms: list[float]
    tokens_per_s: float | None
    tflops: float | None
    mfu: float | None
    flops_per_step: float | None
    memory_bytes: float | None
    reserved_bytes: float | None
    memory_kind: str | None
    final_loss: float | None
    parity: str | None
    parity_rel_diff: float | None
    parity_reason: str | None
    curve_max_rel_dev: float | None
    curve_dev_step: int | None
    reference_mode: str | None
    reference_final: float | None
    parity_tolerance: float | None
    parity_margin: float | None
    """What a verdict certifies, relative to the reference's final loss: the equivalence margin, or the band's
    half-width at the end (its power; a pass with a wide one says little)."""
    fp8_proof: str | None
    gpu_busy: float | None
    bound: str | None
    """launch-bound or GPU-bound, from gpu_busy."""
    validation_metric: str | None
    validation: float | None
    validation_verdict: str | None
    # Energy (NVML over the timed steps): NaN where the case has no reading. A frame drops each of these
    # columns where no row has it, so that runs without energy keep their tables as they were.
    j_per_step: float | None = NAN
    tokens_per_j: float | None = NAN
    avg_power_w: float | None = NAN
    power_cap_share: float | None = NAN
    sm_clock_p50: float | None = NAN
    throttle: str | float = NAN
    """Thermal, hardware-slowdown or power-cap shares in words; NaN where none passed its threshold."""
    power_limit_w: float | None = NAN


ENERGY_COLUMNS = ("j_per_step", "tokens_per_j", "avg_power_w", "power_cap_share", "sm_clock_p50", "throttle",
                  "power_limit_w")
"""CaseRow's energy columns, dropped from a frame where no row has a reading."""


@dataclass(frozen=True)
class Baselines:
    """The columns the case table adds by joining each case to its size's baselines (same source, workload, size)."""

    amp_ms: float
    """PT-AMP's median step."""
    amp_mem: float
    """PT-AMP's peak memory."""
    compile_ms: float
    """PT-AMP+compile's median step."""
    speedup_vs_amp: float
    speedup_vs_compile: float
    memory_vs_amp: float
    """Peak memory as a share of PT-AMP's: 0.88 for 12% less."""


@dataclass(frozen=True)
class CaseMarks:
    """The columns the case table's display adds (report.context): marks, not measurements."""

    spread: str
    """"IQR > median" where a case's IQR exceeds its median (tables.noisy): its median says little."""


@dataclass(frozen=True)
class AoFp8:
    """torchao's best FP8 at one size beside TE's, each with its verdict (headline columns where torchao ran)."""

    ao_ran: bool
    best_ao_fp8: str | None
    ao_fp8_speedup_vs_amp: float
    ao_fp8_speedup_vs_compile: float
    te_vs_ao: float
    """TE-FP8's best step over torchao's best: above 1, torchao is faster."""
    te_parity: str | None
    ao_parity: str | None
    te_vs_ao_passing: float
    """The same among the cases that count: the choice a user makes."""


@dataclass(frozen=True)
class HeadlineRow:
    """One (source, workload, size) of the headline: the fastest case that counts, its speedups, memory, parity."""

    source: str
    workload: str
    size: str
    fastest: str | None
    step_ms: float
    speedup_vs_amp: float
    speedup_vs_compile: float
    memory_saving_vs_amp: float
    memory_change: float
    """Signed ("−12%", "+1.9%"): peak memory against PT-AMP's."""
    faster_not_passing: str
    best_fp8: str | None
    fp8_speedup_vs_amp: float
    noise: str
    parity: str
    not_ok: int
    ao: AoFp8 | None = None
    """Where torchao's cases were in the matrix at this size; its columns follow the others."""

    def values(self) -> dict[str, Any]:
        """The row's columns by name, torchao's flattened in after the others (none where it has none)."""
        out = {f.name: getattr(self, f.name) for f in _HEADLINE_FIELDS}
        if self.ao is not None:
            out.update(_values(self.ao))
        return out


_HEADLINE_FIELDS = tuple(f for f in dataclasses.fields(HeadlineRow) if f.name != "ao")


def _values(row: Any) -> dict[str, Any]:
    # Not dataclasses.asdict: it deep-copies every list (each row's samples), which a frame does not need.
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}


def columns(*kinds: type) -> tuple[str, ...]:
    """The column names the declared row types give, in declaration order (HeadlineRow's torchao ones included)."""
    names: list[str] = []
    for kind in kinds:
        for f in dataclasses.fields(kind):
            names.extend(columns(AoFp8) if (kind is HeadlineRow and f.name == "ao") else [f.name])
    return tuple(names)


def frame(rows: Sequence[CaseRow]) -> pd.DataFrame:
    """The case rows as a frame, one column per CaseRow field in declaration order (empty without rows)."""
    return pd.DataFrame([_values(r) for r in rows])


def headline_frame(rows: Sequence[HeadlineRow]) -> pd.DataFrame:
    """The headline rows as a frame; torchao's columns only where a row has them."""
    return pd.DataFrame([r.values() for r in rows])
