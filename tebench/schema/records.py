"""Typed result records: what one line of ``results.jsonl`` holds, and what is derived from it.

:mod:`tebench.store.reader` reads and validates the file (plain dicts, checked key
by key); this module turns those dicts into dataclasses every reader uses:

* :class:`RunHeader`: a run's identity and environment (the ``header`` line);
* :class:`CaseResult`: one finished case (one round), made of parts
  (:class:`Timing`, :class:`Throughput`, :class:`Memory`, :class:`Loss`,
  :class:`Validation`, :class:`GpuBusy`, :class:`Parity`, :class:`Device`);
* :class:`CaseRounds`: every round of one case in one run, where the values
  over rounds (pooled median, its interquartile interval, tokens/s, TFLOP/s,
  MFU, memory peaks, the median of round medians) are computed, once;
* :class:`RunRecords`: a run read for reporting, its parity judged again.

Each part has ``from_dict`` and ``to_dict`` with ``to_dict(from_dict(d)) == d``,
key order included: keys this tebench does not know (written by a newer one,
or added by work in flight) are kept in ``extra`` and written back unchanged.
A record's schema version is checked here as in :func:`check_version`:
every version from ``MIN_READABLE_VERSION`` to ``SCHEMA_VERSION``
is read; upgrades of an older version go in :data:`UPGRADES`.

Torch-free: only the parent process uses it.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Sequence

import numpy as np

from tebench.analysis import parity as parity_rules
from tebench.store import reader as results
from tebench.schema.version import RecordError, SCHEMA, SCHEMA_VERSION, check_version
from tebench.analysis import stats

STATUS_SEVERITY = ("failed", "timeout", "oom", "diverged", "ok", "skipped")
"""Worst first: the status a case shows when its rounds disagree."""

UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
"""``version -> function`` turning a record of that schema version into one of the next version.

Empty while ``SCHEMA_VERSION`` is 1: nothing stored has changed meaning yet. A version
without an entry is read as it is (a bump that only added optional keys needs none).
"""


class _Part:
    """A dataclass read from a JSON object: declared keys become fields, the rest stay in ``extra``.

    ``_keys`` remembers which keys the object had and in which order, so that a
    key stored as null stays null, a key never stored stays absent, and
    ``to_dict`` writes the keys back in the order they were read.
    """

    PARTS: ClassVar[dict[str, type["_Part"]]] = {}
    """Fields that hold a nested part (read from an object, written back with its ``to_dict``)."""
    ALWAYS: ClassVar[tuple[str, ...]] = ()
    """Fields written even when None and not read (records built here, not read from a file)."""

    extra: dict[str, Any]
    _keys: tuple[str, ...]

    @classmethod
    def _names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.name not in ("extra", "_keys")]  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, d: dict[str, Any]):
        """The part of a JSON object; unknown keys are kept in ``extra``."""
        if not isinstance(d, dict):
            raise RecordError(cls.__name__, d, "must be an object")
        names = cls._names()
        kwargs: dict[str, Any] = {}
        for name in names:
            if name in d:
                value = d[name]
                part = cls.PARTS.get(name)
                kwargs[name] = part.from_dict(value) if (part is not None and isinstance(value, dict)) else value
        extra = {k: v for k, v in d.items() if k not in kwargs}
        return cls(**kwargs, extra=extra, _keys=tuple(d))  # type: ignore[call-arg]

    def stored(self, key: str, default: Any = None) -> Any:
        """A field or extra key as stored: ``default`` only when it was never stored (a stored null stays None)."""
        if key in self.extra:
            return self.extra[key]
        value = getattr(self, key, None)
        return value if (value is not None or key in self._keys) else default

    def to_dict(self) -> dict[str, Any]:
        """The JSON object again: the keys read, in their order; new keys after them."""
        out: dict[str, Any] = {}
        for name in self._names():
            value = getattr(self, name)
            if value is None and name not in self._keys and name not in self.ALWAYS:
                continue
            out[name] = value.to_dict() if isinstance(value, _Part) else value
        out.update(self.extra)
        if not self._keys:
            return out
        order = {k: i for i, k in enumerate(self._keys)}
        return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))


def _part(cls: type) -> type:
    """``@dataclass`` with the two bookkeeping fields of :class:`_Part` appended."""
    cls.__annotations__ = {**cls.__annotations__, "extra": "dict[str, Any]", "_keys": "tuple[str, ...]"}
    cls.extra = field(default_factory=dict)
    cls._keys = field(default=(), repr=False, compare=False)
    return dataclass(cls)


# --- parts of a case record -------------------------------------------------------------------------


@_part
class Device(_Part):
    """Where the case ran: ``type`` (cuda, cpu), the model ``name``, and for a GPU its ``uuid``, index …"""

    type: str | None = None
    name: str | None = None
    uuid: str | None = None


@_part
class Summary(_Part):
    """Median, its interquartile interval (``p25`` … ``p75``), spread and extremes of step times (ms).

    What :func:`stats.summarize` returns; all None for no samples.
    """

    n: int | None = None
    median: float | None = None
    mean: float | None = None
    stdev: float | None = None
    min: float | None = None
    max: float | None = None
    p10: float | None = None
    p25: float | None = None
    p75: float | None = None
    p90: float | None = None
    iqr: float | None = None
    iqr_rel: float | None = None

    @classmethod
    def of(cls, samples: Sequence[float]) -> "Summary":
        """The summary of some per-step times (``stats.summarize``)."""
        return cls.from_dict(stats.summarize(samples))


@_part
class Timing(_Part):
    """Per-step times of one round, as measured (milliseconds), and the summary stored with them."""

    PARTS = {"stats": Summary}

    samples_ms: list[float] = field(default_factory=list)
    timer: str | None = None
    wall_ms_per_step: float | None = None
    stats: Summary | None = None
    """``stats.summarize(samples_ms)`` as the runner stored it (readers use :attr:`summary`)."""

    @property
    def summary(self) -> Summary:
        """Median, quartiles and extremes, from the samples (the stored summary where there are none)."""
        if self.samples_ms:
            return Summary.of(self.samples_ms)
        return self.stats or Summary()


@_part
class Throughput(_Part):
    """What one step does (tokens, FLOPs) and the rates stored at the median step time."""

    tokens_per_step: float | None = None
    tokens_per_s: float | None = None
    flops_per_step: float | None = None
    tflops: float | None = None
    mfu: float | None = None
    mfu_basis: str | None = None


@_part
class Memory(_Part):
    """Memory peaks: CUDA allocator peaks on a GPU, the process peak RSS on a CPU."""

    kind: str | None = None
    peak_allocated_bytes: float | None = None
    peak_reserved_bytes: float | None = None
    peak_rss_bytes: float | None = None
    param_count: int | None = None

    @property
    def peak_bytes(self) -> float | None:
        """A case's peak memory: CUDA max allocated on a GPU, the process peak RSS on a CPU."""
        return self.peak_allocated_bytes or self.peak_rss_bytes


@_part
class Loss(_Part):
    """The loss of every training step, and its first and final values (final: a window's mean)."""

    per_step: list[float] = field(default_factory=list)
    warmup_steps: int | None = None
    first: float | None = None
    final: float | None = None


@_part
class Validation(_Part):
    """Held-out validation: ``metric`` names the key (in ``extra``) that holds its value."""

    metric: str | None = None

    @property
    def value(self) -> Any:
        return self.extra.get(self.metric) if self.metric else None


@_part
class GpuBusy(_Part):
    """Fraction of the step the GPU was busy (kernel time from a profiled window)."""

    busy_fraction: float | None = None
    kernel_ms_per_step: float | None = None
    method: str | None = None


@_part
class Warmup(_Part):
    """How the untimed warm-up ended: its ``rule`` (fixed, settled), the ``steps`` it took, whether times settled."""

    rule: str | None = None
    steps: int | None = None
    settled: bool | None = None
    floor: int | None = None
    ceiling: int | None = None


@_part
class Launch(_Part):
    """How the case's process started: ``method`` prestarted or cold, and what a pre-started worker's imports cost."""

    method: str | None = None
    preload_s: float | None = None
    """A pre-started worker's whole import time, wall-clock: time it was stopped (``paused_s``) while
    still importing is in it."""
    waited_s: float | None = None
    """How long it sat ready before its case arrived (0: the case arrived during the imports)."""
    hidden_s: float | None = None
    """The part of ``preload_s`` done before the case arrived: in no case's time (the rest is in start-up)."""
    paused_s: float | None = None
    """Seconds the pre-started worker was stopped while earlier cases' timed steps ran."""
    after_previous_s: float | None = None
    """Seconds from the previous case's record on the same device to this case's hand-off."""

    def hidden(self, startup_s: float) -> float:
        """Import seconds hidden behind the previous case. Records from before ``hidden_s`` was kept
        give an estimate: all of it if the worker waited, else what is not in the case's start-up
        (``startup_s``, which also holds the CUDA context: the estimate errs low)."""
        if self.hidden_s is not None:
            return self.hidden_s
        if not self.preload_s:
            return 0.0
        if self.waited_s and self.waited_s > 0.01:
            return self.preload_s
        return max(0.0, self.preload_s - startup_s)


@_part
class Parity(_Part):
    """The loss-parity verdict of a case against its reference mode (see :mod:`tebench.analysis.parity`)."""

    verdict: str | None = None
    reason: str | None = None
    reference_mode: str | None = None
    final: float | None = None
    reference_final: float | None = None
    rel_diff: float | None = None
    tolerance: float | None = None
    max_curve_rel_dev: float | None = None
    max_curve_dev_step: int | None = None
    band: Any = None
    validation: dict[str, Any] | None = None

    @property
    def judged(self) -> bool:
        """A verdict that judges the case (pass, fail, inconclusive), not reference or n/a."""
        return self.verdict in parity_rules.JUDGED

    @property
    def passed(self) -> bool:
        """True only for a judged ``pass`` (``inconclusive`` is never a pass)."""
        return parity_rules.passed({"parity": {"verdict": self.verdict}})

    @property
    def validation_verdict(self) -> str | None:
        return (self.validation or {}).get("verdict")


def _check_version(d: dict[str, Any], where: str) -> dict[str, Any]:
    """``d`` upgraded to the current schema; SchemaError for a version this tebench cannot read.

    A dict without ``schema_version`` is one built in this process (not read from a file): current.
    """
    if not isinstance(d, dict):
        raise RecordError("", d, f"{where}: not a JSON object but {type(d).__name__}")
    version = d.get("schema_version")
    if version is None:
        return d
    check_version({"schema": d.get("schema", SCHEMA), **d}, where)
    while version < SCHEMA_VERSION:
        # A version that only added optional keys needs no upgrade: readers see them as absent.
        d = UPGRADES.get(version, dict)(d)
        version += 1
    return d


@_part
class CaseResult(_Part):
    """One finished case, one round: identity, outcome and what was measured.

    The measured parts are None when the case did not produce them (skipped,
    failed). Values derived from them are properties computed from the raw
    samples, never a second stored copy.
    """

    PARTS = {"device": Device, "timing": Timing, "throughput": Throughput, "memory": Memory, "loss": Loss,
             "validation": Validation, "gpu_busy": GpuBusy, "parity": Parity, "warmup": Warmup, "launch": Launch}
    ALWAYS = ("type", "case_id", "case", "status", "reason")

    schema: str | None = None
    schema_version: int | None = None
    type: str = "case"
    run_id: str | None = None
    case_id: str = ""
    round: int | None = None
    case: dict[str, Any] = field(default_factory=dict)
    status: str = "failed"
    reason: str | None = None
    device: Device | None = None
    started: str | None = None
    duration_s: float | None = None
    log: str | None = None
    memory: Memory | None = None
    loss: Loss | None = None
    validation: Validation | None = None
    gpu_busy: GpuBusy | None = None
    fp8_state: Any = None
    setup: dict[str, Any] | None = None
    phases: dict[str, Any] | None = None
    distributed: dict[str, Any] | None = None
    warmup: Warmup | None = None
    launch: Launch | None = None
    timing: Timing | None = None
    throughput: Throughput | None = None
    parity: Parity | None = None
    shard_run_id: str | None = None
    """The run id of the shard a merged record came from (``run_id`` is then the merged run's)."""

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "record") -> "CaseResult":
        """A case record (as :func:`results.read` returns it, or as the runner builds it)."""
        return super().from_dict(_check_version(d, where))

    # --- what the case is
    @property
    def round_no(self) -> int:
        """The round, 0 when not stored."""
        return self.round or 0

    @property
    def workload(self) -> str:
        return self.case["workload"]

    @property
    def size(self) -> str:
        return self.case["size"]

    @property
    def mode(self) -> str:
        return self.case["mode"]

    @property
    def parallel(self) -> str:
        return self.case.get("parallel", "single")

    @property
    def nproc(self) -> int:
        return self.case.get("nproc", 1)

    @property
    def graphs(self) -> bool:
        return bool(self.case.get("graphs"))

    @property
    def fp8_weights(self) -> bool:
        return bool(self.case.get("fp8_weights"))

    @property
    def fp8(self) -> dict[str, Any]:
        return self.case.get("fp8") or {}

    @property
    def settings(self) -> dict[str, Any]:
        return self.case.get("settings") or {}

    @property
    def variant(self) -> str:
        """The mode plus its options: the case id without workload and size (``TE-FP8/delayed.E4M3.h16.max``)."""
        from tebench.plan.matrix import Case  # torch-free, but heavier than the readers need up front

        return Case.from_dict(self.case).variant

    @property
    def device_name(self) -> str:
        """The device model, "?" when not recorded (cases are keyed by it)."""
        return (self.device.name if self.device else None) or "?"

    # --- measured and derived values
    @property
    def samples_ms(self) -> list[float]:
        return self.timing.samples_ms if self.timing else []

    @property
    def summary(self) -> Summary:
        return self.timing.summary if self.timing else Summary()

    @property
    def median_ms(self) -> float | None:
        """The median step time as the summary computes it (``stats.summarize``, the stored ``timing.stats``)."""
        return self.summary.median

    @property
    def round_median_ms(self) -> float | None:
        """This round's level as the regression tests take it (``np.median``; may differ from
        :attr:`median_ms` in the last bit, since ``np.percentile`` interpolates in another order)."""
        return float(np.median(self.samples_ms)) if self.samples_ms else None

    def rates(self, peak_tflops: dict[str, Any] | None = None) -> dict[str, Any]:
        """Tokens/s, TFLOP/s and MFU at this round's median step time (see :meth:`CaseRounds.throughput`)."""
        return CaseRounds([self], peak_tflops).throughput()

    @property
    def peak_memory(self) -> float | None:
        return self.memory.peak_bytes if self.memory else None

    @property
    def final_loss(self) -> float | None:
        return self.loss.final if self.loss else None

    @property
    def busy_fraction(self) -> float | None:
        return self.gpu_busy.busy_fraction if self.gpu_busy else None

    @property
    def verdict(self) -> str | None:
        """The loss-parity verdict (None when the case was not judged)."""
        return self.parity.verdict if self.parity else None

    @property
    def problem(self) -> bool:
        """Not ok (and not skipped), or judged on loss parity without passing (``--strict`` fails on it)."""
        return self.status not in ("ok", "skipped") or bool(self.parity and self.parity.judged
                                                           and not self.parity.passed)

    @property
    def why(self) -> str | None:
        """The reason shown for a problem: the status's, else the parity verdict's."""
        return self.reason or (self.parity.reason if self.parity else None)


@_part
class RunHeader(_Part):
    """A run's header line: identity, command, matrix and environment."""

    schema: str | None = None
    schema_version: int | None = None
    type: str = "header"
    run_id: str | None = None
    created: str | None = None
    resumed: bool | None = None
    command: list[str] | None = None
    cwd: str | None = None
    tebench: Any = None
    matrix: dict[str, Any] | None = None
    rounds: int | None = None
    shard: list[int] | None = None
    case_ids: list[str] | None = None
    devices: list[Any] | None = None
    excluded: list[dict[str, Any]] | None = None
    """The matrix's ``[[exclude]]`` rules, their reasons and how many cases each removed."""
    launch: str | None = None
    """How cases' processes started (``--launch``); None in runs older than the option."""
    prestart_depth: int | None = None
    """Pre-started workers per device (``--prestart-depth``) when ``launch`` is prestarted."""
    prestart_pause: bool | None = None
    """Whether pre-started workers were stopped during timed steps (False: ``--no-pause``)."""
    compile_cache: dict[str, Any] | None = None
    """``{"dir": ..., "state": "cold" | "warm" | "off"}``: the compile cache the run began with."""
    env: dict[str, Any] | None = None
    ab: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "header") -> "RunHeader":
        return super().from_dict(_check_version(d, where))

    @property
    def environment(self) -> dict[str, Any]:
        return self.env or {}

    @property
    def device(self) -> str:
        """The first GPU's name, or ``CPU (<cpu>)``."""
        gpus = self.environment.get("gpus") or []
        return gpus[0]["name"] if gpus else f"CPU ({self.environment.get('cpu') or 'unknown'})"

    @property
    def peak_tflops(self) -> dict[str, Any] | None:
        return self.environment.get("peak_tflops")

    @property
    def matrix_name(self) -> str | None:
        return (self.matrix or {}).get("name")

    @property
    def concurrent(self) -> bool:
        """The run executed several cases at once (``--devices`` with more than one GPU)."""
        return len(self.devices or []) > 1


# --- every round of one case -------------------------------------------------------------------------


def speedup(reference_ms: Any, ms: Any) -> Any:
    """How many times faster than the reference: ``reference median / median`` (works on arrays too)."""
    return reference_ms / ms


class CaseRounds:
    """Every round of one case in one run (one device): the values a report or a comparison shows.

    Two medians, on purpose: :attr:`median_ms` pools the rounds' steps (the
    report's step time, and the one that is stored for a single round);
    :attr:`level_ms` is the median of the rounds' medians, the round-level
    value the regression tests work with (a round is one process, the unit
    of replication).
    """

    def __init__(self, records: Iterable[CaseResult], peak_tflops: dict[str, Any] | None = None):
        self.records = sorted(records, key=lambda r: r.round_no)
        if not self.records:
            raise ValueError("CaseRounds needs at least one record")
        self.peak_tflops = peak_tflops
        self.ok = [r for r in self.records if r.status == "ok" and r.timing]
        """The rounds that finished ok with a step time."""

    @property
    def case_id(self) -> str:
        return self.records[-1].case_id

    @property
    def case(self) -> dict[str, Any]:
        return self.records[-1].case

    @property
    def last(self) -> CaseResult:
        """The last ok round (the last round when none is ok): its memory, loss and parity are shown."""
        return (self.ok or self.records)[-1]

    @property
    def status(self) -> str:
        """The worst status of the rounds."""
        return min((r.status for r in self.records), key=STATUS_SEVERITY.index)

    @property
    def reason(self) -> str | None:
        status = self.status
        return next((r.reason for r in self.records if r.status == status and r.reason), None)

    @property
    def rounds_ms(self) -> list[list[float]]:
        """The per-step samples of each ok round."""
        return [r.samples_ms for r in self.ok]

    @property
    def samples_ms(self) -> list[float]:
        return [s for r in self.ok for s in r.samples_ms]

    @functools.cached_property
    def summary(self) -> Summary:
        """``stats.summarize`` of the pooled steps: the median and its interquartile interval (p25, p75) …"""
        samples = self.samples_ms
        if samples:
            return Summary.of(samples)
        # A pytest-benchmark entry may come with its summary only.
        return (self.ok[-1].timing.stats or Summary()) if self.ok else Summary()

    @property
    def median_ms(self) -> float | None:
        return self.summary.median

    @property
    def round_medians_ms(self) -> list[float]:
        """Each ok round's median step time (:attr:`CaseResult.round_median_ms`)."""
        return [m for r in self.ok if (m := r.round_median_ms) is not None]

    @property
    def level_ms(self) -> float | None:
        """The median of the rounds' median step times (None without a timed round)."""
        medians = self.round_medians_ms
        return float(np.median(medians)) if medians else None

    def throughput(self, median_ms: float | None = None) -> dict[str, Any]:
        """Tokens/s, TFLOP/s and MFU at ``median_ms`` (default: the pooled median).

        From the workload's tokens and FLOPs per step as stored; the stored
        rates when there is no step time to recompute them from.
        """
        last = self.last
        stored = last.throughput.to_dict() if last.throughput else {}
        median = self.median_ms if median_ms is None else median_ms
        tokens = stored.get("tokens_per_step")
        if not (median and tokens):
            return stored
        return stats.throughput(median, tokens, stored.get("flops_per_step") or 0.0, self.peak_tflops,
                                self.case.get("nproc", 1))

    @property
    def tokens_per_s(self) -> float | None:
        """Tokens per second at the round level (:attr:`level_ms`), as compared between runs."""
        level = self.level_ms
        if level is None:
            return None
        return self.throughput(level).get("tokens_per_s") if self._tokens_per_step else None

    @property
    def _tokens_per_step(self) -> float | None:
        last = self.records[-1]
        return last.throughput.tokens_per_step if last.throughput else None

    @property
    def memory_peaks(self) -> list[float]:
        """The peak memory of each ok round (rounds without one left out)."""
        return [m for r in self.ok if (m := r.peak_memory)]

    @property
    def busy_fraction(self) -> float | None:
        """The median over ok rounds of the fraction of the step the GPU was busy."""
        busy = [b for r in self.ok if (b := r.busy_fraction) is not None]
        return float(np.median(busy)) if busy else None


def by_case(records: Iterable[CaseResult], peak_tflops: dict[str, Any] | None = None,
            by_device: bool = False) -> dict[Any, CaseRounds]:
    """Records grouped by case id (and device name, with ``by_device``), in first-seen order."""
    groups: dict[Any, list[CaseResult]] = {}
    for r in records:
        key = (r.case_id, r.device_name) if by_device else r.case_id
        groups.setdefault(key, []).append(r)
    return {k: CaseRounds(v, peak_tflops) for k, v in groups.items()}


# --- a run ---------------------------------------------------------------------------------------


def judge_parity(records: Sequence[CaseResult]) -> None:
    """Judge (again) every record with a loss curve against the references among ``records``.

    The one judgement every reader uses (report, ``--strict``, compare, merge):
    :func:`parity.attach` over the records' dicts, its verdicts put back.
    """
    dicts = [r.to_dict() for r in records]
    parity_rules.attach(dicts)
    for r, d in zip(records, dicts):
        if "parity" in d:
            r.parity = Parity.from_dict(d["parity"])


@dataclass
class RunRecords:
    """A results file read into typed records: the last record of each (case, round)."""

    path: str
    header: RunHeader
    headers: list[RunHeader]
    cases: list[CaseResult]
    problems: list[str] = field(default_factory=list)
    """``file:line: what is wrong`` for each line skipped while reading."""

    @property
    def run_id(self) -> str:
        return self.header.run_id or ""

    @property
    def concurrent(self) -> bool:
        return any(h.concurrent for h in self.headers)

    def by_case(self, by_device: bool = False) -> dict[Any, CaseRounds]:
        return by_case(self.cases, self.header.peak_tflops, by_device)

    @property
    def problem_cases(self) -> list[CaseResult]:
        """Cases not ok, or judged on loss parity without passing: what ``tebench run --strict`` fails on."""
        return [r for r in self.cases if r.problem]


def from_run(run: results.Run, judge: bool = True) -> RunRecords:
    """Typed records of a run read by :func:`results.read`; parity judged again unless ``judge`` is False."""
    cases = [CaseResult.from_dict(d, f"{run.path}: case {d.get('case_id')!r}") for d in run.latest().values()]
    if judge:
        judge_parity(cases)
    headers = [RunHeader.from_dict(h, f"{run.path}: header") for h in run.headers]
    return RunRecords(run.path, headers[0] if headers else RunHeader(), headers, cases, list(run.problems))


def read(path: str | Path, judge: bool = True) -> RunRecords:
    """Read a results file or run directory (see :func:`results.read`) into typed records."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = results.read(path)
    # Warned again from the caller's line, as results.read warns: one place (this function)
    # for every reader would let Python show a file's skipped-lines warning only once per process.
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=2)
    return from_run(run, judge)
