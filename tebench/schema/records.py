"""Typed result records: every line of ``results.jsonl``, declared once, for the worker and the parent.

* :class:`Measurements`: what a worker measures for one case (its result file);
* :class:`CaseResult`: one finished case, one round, as stored: the worker's
  measurements plus the runner's identity, statistics and verdicts;
* :class:`RunHeader`: a run's identity and environment (the ``header`` line).

Each record is made of parts (:class:`Timing`, :class:`Memory`, :class:`Loss`,
:class:`Phases` …), pydantic models on :class:`tebench.schema.part.Part`. A field is
declared once, on its part: its type (the annotation), its limits and its doc
(:func:`~tebench.schema.part.field`). Reading, validation with the field's path in every
error, writing and the results reference (:mod:`tebench.store.reference`) all come from
those declarations: a new measured field is one line here.

``to_dict(from_dict(d)) == d``, key order included: keys this tebench does not
know (written by a newer one) are kept in ``extra`` and written back unchanged.
A record's schema version is checked as in :func:`tebench.schema.version.check_version`;
upgrades of an older version go in :data:`UPGRADES`.

Torch-free, and free of every tebench layer above it: checks that need the mode, recipe or
workload registries (a case's mode is a known one, its dimensions fit its workload) run in
the plan's pass over a record (:mod:`tebench.plan.record_checks`).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Annotated, Any, Callable, Sequence

from annotated_types import Interval
from pydantic import BeforeValidator, ConfigDict, InstanceOf, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tebench.schema import version as versions
from tebench.schema.environment import Environment, PeakRates
from tebench.schema.fp8_point import FP8Point
from tebench.schema.knobs import FieldError, check_stored, fields_by_name
from tebench.schema.part import MAX_INT, AnyNum, Bool, Int, Limits, Num, OneOf, Part, Row, Str, field, kind
from tebench.schema.settings import Settings
from tebench.schema.version import SCHEMA, STATUSES, RecordError, check_version
from tebench.schema.vocabulary import AMAX_ALGOS, FORMATS, JUDGED, MAX_ROUNDS, PARALLEL

if TYPE_CHECKING:  # numpy is imported only where a statistic is computed
    import numpy as np

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""Unicode's control characters (category Cc): C0, DEL and C1."""

UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
"""``version -> function`` turning a record of that schema version into one of the next version.

Empty while ``versions.SCHEMA_VERSION`` is 1: nothing stored has changed meaning yet. A version
without an entry is read as it is (a bump that only added optional keys needs none).
"""


# --- parts a worker measures ---------------------------------------------------------------------


class Device(Part):
    """Where the case ran: ``type`` (cuda, cpu), the model ``name``, and for a GPU its ``uuid``, index …"""

    type: Str | None = field(None, "cuda or cpu.")
    name: Str | None = field(None, "The device model (cases are keyed by it).")
    uuid: Str | None = field(None, "The GPU's UUID: tells two GPUs of one model apart.")
    index: Int | None = field(None, "The CUDA device index the worker saw.", ge=0)
    capability: list[Int] | None = field(None, "Compute capability [major, minor].")
    memory_bytes: Int | None = field(None, "The GPU's memory.", ge=0)
    assigned: Str | None = field(None, "The --devices slot that ran it (set by the runner).")
    visible_devices: Str | None = field(None, "CUDA_VISIBLE_DEVICES in the worker.")


MAX_STEP_MS = 1e12
"""The longest step time a record may hold (ms): about 32 years. Longer is damage, and is refused where
it is read (the line skipped, naming the field): every statistic of finite step times within it stays
finite (sums, squares, ratios of medians), where a sample near the float maximum (1e308 ms) made a mean
or a spread inf and the record model then refused its own summary."""
MAX_BYTES = float(2**60)
"""The most memory a record may say a case used: an exbibyte, a million times today's largest GPU. More is damage,
refused where it is read (the line skipped, naming the field), as a step time past :data:`MAX_STEP_MS` is: a peak of
1e300 bytes overflowed the report's unit arithmetic and printed a 280-digit size."""
MIN_STEP_MS = 1e-6
"""The shortest step time a pytest-benchmark round may give (ms): a nanosecond, below every timer's resolution. A
step takes time, so 0 is damage, and so is a subnormal number, whose ratio to a real step overflows. (A results
file's record keeps such a time, and compare calls the case invalid: the head's damage fails the gate.)"""


def _mean_stdev(a: Any) -> tuple[float, float]:
    """Mean and sample standard deviation of a non-empty numpy array, finite for finite samples.

    Samples near the float maximum (1e308) overflow a sum or a square to inf; then both are computed
    on the samples divided by their largest magnitude and scaled back. Other samples are computed
    directly, so every stored number stays what it was to the last bit.
    """
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(a.mean())
        stdev = float(a.std(ddof=1)) if a.size > 1 else 0.0
    if (math.isfinite(mean) and math.isfinite(stdev)) or not np.isfinite(a).all():
        return mean, stdev
    scale = float(np.abs(a).max())
    unit = a / scale
    return float(unit.mean()) * scale, (float(unit.std(ddof=1)) * scale if a.size > 1 else 0.0)


def _ratio(num: float, den: float) -> float | None:
    """``num / den``, or None where ``den`` is 0 or the quotient is not a finite float (a median of
    1e-300 ms under a spread of 1e10 ms): no relative spread can be stated."""
    if not den:
        return None
    try:
        value = num / den
    except (OverflowError, ZeroDivisionError):
        return None
    return value if math.isfinite(value) else None


def median(samples: Sequence[float] | np.ndarray) -> float:
    """The median of per-step times: the one definition (``np.median``) behind every stored and derived
    median step time, in the worker and the parent alike."""
    import numpy as np  # only where a median is computed

    return float(np.median(np.asarray(samples, dtype=float)))


class Summary(Part):
    """Median, its interquartile interval (``p25`` … ``p75``), spread and extremes of step times (ms).

    Computed from the samples by :meth:`of`; only ``n`` for no samples.
    """

    n: Int | None = field(None, "Number of samples.", ge=0)
    median: Num | None = field(None, "Median (ms).")
    mean: Num | None = field(None, "Mean (ms).")
    stdev: Num | None = field(None, "Sample standard deviation (ms).")
    min: Num | None = field(None, "Fastest sample (ms).")
    max: Num | None = field(None, "Slowest sample (ms).")
    p10: Num | None = field(None, "10th percentile (ms).")
    p25: Num | None = field(None, "25th percentile (ms).")
    p75: Num | None = field(None, "75th percentile (ms).")
    p90: Num | None = field(None, "90th percentile (ms).")
    iqr: Num | None = field(None, "p75 - p25 (ms).")
    iqr_rel: Num | None = field(None, "iqr / median: the relative spread.")

    @classmethod
    def of(cls, samples: Sequence[float]) -> "Summary":
        """Median, dispersion and extremes of per-step times (milliseconds): computed here only."""
        import numpy as np  # only where a summary is computed

        a = np.asarray(samples, dtype=float)
        if a.size == 0:
            values: dict[str, Any] = {"n": 0}
        else:
            p10, p25, p75, p90 = (float(x) for x in np.percentile(a, [10, 25, 75, 90]))
            # np.median, not the 50th percentile: the one median every value over samples is taken with
            # (the regression tests' round levels too); the percentile's interpolation can differ in the last bit.
            p50 = median(a)
            mean, stdev = _mean_stdev(a)
            values = {"n": int(a.size), "median": p50, "mean": mean, "stdev": stdev, "min": float(a.min()),
                      "max": float(a.max()), "p10": p10, "p25": p25, "p75": p75, "p90": p90,
                      "iqr": p75 - p25, "iqr_rel": _ratio(p75 - p25, p50)}
        summary: Summary = cls.from_dict(values)  # written as computed: a null iqr_rel too
        return summary


class Timing(Part):
    """Per-step times of one round, as measured (milliseconds), and the summary stored with them."""

    samples_ms: list[Annotated[Num, Limits(ge=0, le=MAX_STEP_MS)]] = field(
        list, "Each timed step's milliseconds, in order.", min_length=1, required=True)
    timer: Str | None = field(None, "cuda_events (GPU timeline) or perf_counter (CPU).")
    wall_ms_per_step: Num | None = field(None, "Wall-clock milliseconds per timed step, host included.", ge=0)
    stats: Summary | None = field(None, "The summary of samples_ms as the runner stored it (readers recompute it "
                                        "from the samples).")
    """``Summary.of(samples_ms)`` as the runner stored it (readers use :attr:`summary`)."""

    @property
    def summary(self) -> Summary:
        """Median, quartiles and extremes, from the samples (the stored summary where there are none)."""
        if self.samples_ms:
            return Summary.of(self.samples_ms)
        return self.stats or Summary()

    @property
    def median_ms(self) -> float | None:
        """:attr:`summary`'s median, without the rest of the summary (a regression test takes every round's)."""
        if self.samples_ms:
            return median(self.samples_ms)
        return (self.stats or Summary()).median


def _rate(value: float) -> float | None:
    """A rate, or None where it overflows a float: a step time so short (a damaged median of 5e-324 ms)
    that its rate is infinite has no rate, rather than a record that fails its own check."""
    return value if math.isfinite(value) else None


class Throughput(Part):
    """What one step does (tokens, FLOPs) and the rates stored at the median step time."""

    tokens_per_step: Num | None = field(None, "Tokens one step trains on (all ranks).", ge=0)
    tokens_per_s: Num | None = field(None, "At the median step time.", ge=0)
    flops_per_step: Num | None = field(None, "Model FLOPs of one step (all ranks).", ge=0)
    tflops: Num | None = field(None, "Achieved TFLOP/s at the median step time.", ge=0)
    mfu: Num | None = field(None, "tflops over the device's dense BF16 peak.", ge=0)
    mfu_basis: Str | None = field(None, "Which peak MFU is against, and its source.")

    @classmethod
    def of(cls, median_ms: float, tokens: float, flops: float, peak: PeakRates | None,
           nproc: int = 1) -> "Throughput":
        """Tokens/s, achieved TFLOP/s and MFU from the median step time.

        MFU is against the device's dense BF16 peak for every mode (one yardstick,
        so modes compare directly); it is None when the GPU is unknown or the
        workload has no meaningful FLOP count.
        """
        seconds = median_ms / 1000.0
        tflops = _rate(flops / seconds / 1e12) if seconds > 0 and flops > 0 else None
        peak_bf16 = peak.bf16 if peak else None
        mfu = tflops / (peak_bf16 * nproc) if (tflops is not None and peak_bf16) else None
        # Every key is stored, a null rate included, in this order: from an object.
        throughput: Throughput = cls.from_dict({
            "tokens_per_step": tokens,
            "tokens_per_s": _rate(tokens / seconds) if seconds > 0 else None,
            "flops_per_step": flops,
            "tflops": tflops,
            "mfu": mfu,
            "mfu_basis": (f"dense BF16 peak {peak_bf16} TFLOP/s x {nproc} GPU(s) ({peak.source})"
                          if mfu and peak else None),
        })
        return throughput

    @classmethod
    def at(cls, stored: "Throughput | None", median_ms: float | None, peak: PeakRates | None,
           nproc: int | None) -> "Throughput":
        """The rates of a case whose stored part is ``stored``, at ``median_ms``: from its tokens and FLOPs
        per step; the stored part itself (empty where there is none) without a step time or tokens."""
        stored = stored or cls()
        tokens = stored.tokens_per_step
        if not (median_ms and tokens):
            return stored
        return cls.of(median_ms, tokens, stored.flops_per_step or 0.0, peak, nproc or 1)


class Memory(Part):
    """Memory peaks: CUDA allocator peaks on a GPU, the process peak RSS on a CPU."""

    kind: Str | None = field(None, "cuda or cpu.")
    peak_allocated_bytes: Num | None = field(None, "torch.cuda.max_memory_allocated over the timed steps.", ge=0, le=MAX_BYTES)
    peak_reserved_bytes: Num | None = field(None, "torch.cuda.max_memory_reserved over the timed steps.", ge=0, le=MAX_BYTES)
    peak_rss_bytes: Num | None = field(None, "The process's peak resident set (CPU).", ge=0, le=MAX_BYTES)
    param_count: Int | None = field(None, "Parameters of the model trained.", ge=0)
    # What the memory held between steps is made of (CUDA; each storage counted once):
    between_steps_bytes: Num | None = field(None, "torch.cuda.memory_allocated after the last timed step.", ge=0, le=MAX_BYTES)
    params_bytes: Num | None = field(None, "Parameters kept in high precision.", ge=0, le=MAX_BYTES)
    fp8_weight_bytes: Num | None = field(None, "FP8 weights (fp8_weights) and TE's cached FP8 copies and "
                                               "transposes of weights.", ge=0, le=MAX_BYTES)
    grads_bytes: Num | None = field(None, "Gradients (and TE's main_grad buffers).", ge=0, le=MAX_BYTES)
    optimizer_bytes: Num | None = field(None, "The optimizer's state (moments, master weights).", ge=0, le=MAX_BYTES)

    @property
    def peak_bytes(self) -> float | None:
        """A case's peak memory: CUDA max allocated on a GPU, the process peak RSS on a CPU."""
        return self.peak_allocated_bytes or self.peak_rss_bytes


class Loss(Part):
    """The loss of every training step, and its first and final values (final: a window's mean)."""

    # A diverged run's curve legitimately holds NaN or inf: kept (and restored from the writer's nulls).
    per_step: list[AnyNum] = field(list, "The loss of every step, warm-up included.", required=True)
    warmup_steps: Int | None = field(None, "How many of the first steps were warm-up.", ge=0)
    first: AnyNum | None = field(None, "The first step's loss.")
    final: AnyNum | None = field(None, "The mean of the last steps (parity.final_loss).")
    replicas: list[list[AnyNum]] | None = field(
          None, "A reference mode's extra training runs at other seeds (the reference_seeds setting), untimed: "
                "the loss of every step of each. Their spread is the seed-to-seed noise that parity's "
                "equivalence margin compares a case's difference with.")
    replica_seeds: list[Annotated[Int, Interval(ge=0)]] | None = field(
        None, "The seed of each of the replicas, in order.")
    twins: list[list[AnyNum]] | None = field(
        None, "A reference mode's extra training runs at its own seed, weights and batches, each from the weights "
              "moved by 1 +- twin_scale (the reference_twins setting), untimed: the loss of every step of each. How far "
              "they land from the reference is the paired noise floor that parity's equivalence verdict is judged "
              "against.")


class Validation(Part):
    """Held-out validation: ``metric`` names the key that holds its value (a workload adds its own keys)."""

    metric: Str | None = field(None, "The key holding the validation value (greedy_accuracy, heldout_mse …).")
    kind: Str | None = field(None, "What was validated.")
    count: Int | None = field(None, "How many examples.", ge=0)
    greedy_accuracy: Num | None = field(None, "GPT/Llama: share of greedily generated tokens that continue the "
                                              "stride.", ge=0, le=1)
    sequences_exact: Num | None = field(None, "Share of sequences generated exactly.", ge=0, le=1)
    prompt_tokens: Int | None = field(None, "Prompt length of the generation check.", ge=0)
    generated_tokens: Int | None = field(None, "Tokens generated per sequence.", ge=0)
    heldout_mse: Num | None = field(None, "Distillation: MSE on held-out batches.", ge=0)
    heldout_loss: Num | None = field(None, "GPT/Llama on the zipf-markov task: mean cross-entropy (nats per token) "
                                           "on held-out batches of the source.", ge=0)
    floor: Num | None = field(None, "The task's exact loss floor (the source's entropy rate, nats per token): "
                                    "no model can do better without a leak.", ge=0)
    unigram_entropy: Num | None = field(None, "What a model that learned token frequencies only reaches (nats).",
                                        ge=0)
    uniform_loss: Num | None = field(None, "ln(vocab): the loss of predicting every token alike (nats).", ge=0)
    causal_kl: AnyNum | None = field(None, "GPT/Llama: mean KL (nats) by which the predictions at a held-out "
                                           "sequence's first half moved when its second half was replaced: 0 in a "
                                           "causal model.")
    batch_kl: AnyNum | None = field(None, "GPT/Llama: mean KL (nats) by which a sequence's predictions moved when "
                                          "the other sequences of its batch changed: 0 unless attention runs across "
                                          "the batch.")
    context_kl: AnyNum | None = field(None, "GPT/Llama: mean KL (nats) by which the predictions right after every "
                                            "eighth token moved when that token was replaced: as large as the "
                                            "reference's in a model whose attention mixes positions, 0 in one "
                                            "whose attention never does.")
    structure_fp8: Annotated[Str, OneOf("off", "none", "on")] | None = field(
        None, "How the structural checks (causal_kl, batch_kl, context_kl) ran: "
              "off (FP8 switched off for them), none (no FP8 layer), on (FP8 weights "
              "kept it on). Absent in records from before 2026-12-03's change: "
                                                                                   "they ran with the case's FP8.")
    replicas: list[AnyNum] | None = field(None, "A reference mode's replicas (Loss.replicas): the same metric for "
                                                "each, on the same held-out data.")
    twins: list[AnyNum] | None = field(None, "A reference mode's twins (Loss.twins): the same metric for each, on "
                                             "the same held-out data.")

    @model_validator(mode="after")
    def _metric_is_a_number(self) -> "Validation":
        # Parity compares the metric's value with the reference's: a workload's own metric (a key
        # this part does not declare) must be a finite number too.
        value = self.extra.get(self.metric) if self.metric else None
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or value != value or value in (float("inf"), float("-inf"))):
            raise PydanticCustomError("metric", "must be a finite number, not {kind}",
                                      {"at": self.metric, "kind": kind(value)})
        return self

    @property
    def value(self) -> Any:
        """The metric's value: a declared field, or a workload's own key."""
        if not self.metric:
            return None
        return getattr(self, self.metric) if self.metric in type(self).model_fields else self.extra.get(self.metric)


class GpuBusy(Part):
    """Fraction of the step the GPU was busy (kernel time from a profiled window)."""

    busy_fraction: Num | None = field(None, "Kernel time over the median step time, at most 1.", ge=0, le=1)
    kernel_ms_per_step: Num | None = field(None, "Union of kernel intervals per profiled step.", ge=0)
    method: Str | None = field(None, "How it was measured.")
    profiled_steps: Int | None = field(None, "Extra steps profiled (never timed ones).", ge=0)
    kernels_seen: Int | None = field(None, "Kernel and copy intervals in the profile.", ge=0)


class KernelTime(Row):
    """One kernel name's GPU time in the profiled extra steps."""

    # Required without a default, so that pydantic checks them natively: a nightly's record holds
    # about 150 kernels, and a Python check per kernel was a fifth of reading a file.
    name: Str = field(..., "The kernel's name as the profiler gives it (kernels, Memcpy …, Memset …).",
                      required=True)
    ms: Num = field(..., "Milliseconds per profiled step, durations summed.", ge=0, required=True)
    calls: Num = field(..., "Launches per profiled step.", ge=0, required=True)


class Kernels(Part):
    """The GPU kernels of the profiled extra steps by name: what the time breakdown and the FP8 proof are
    derived from (the parent classifies them: :mod:`tebench.schema.kernel_rules`)."""

    profiled_steps: Int = field(1, "Extra steps profiled (never timed ones).", ge=1, required=True)
    union_ms: Num = field(0.0, "Per step, the union of all kernel intervals (concurrent streams counted once).",
                          ge=0, required=True)
    kernels: list[KernelTime] = field(list, "The kernels by time, longest first (at most the 200 longest names).",
                                      required=True)
    rest_ms: Num | None = field(None, "Per step, the kernels past the names kept.", ge=0)
    rest_calls: Num | None = field(None, "Their launches per step.", ge=0)
    why: Str | None = field(None, "Why these steps were profiled.")
    communication_ms: Num | None = field(None, "Per step, the union of the communication (NCCL) kernels' "
                                               "intervals; absent where none ran.", ge=0)
    communication_exposed_ms: Num | None = field(None, "Of it, the time no other kernel ran beside it: the "
                                                       "communication compute did not hide.", ge=0)


class ModuleCensus(Part):
    """Which modules ran their forward in the profiled steps, and in which precision (forward hooks)."""

    observed: Bool = field(False, "False where hooks see nothing (CUDA graphs, torch.compile): counts unknown.",
                           required=True)
    te_fp8: Int | None = field(None, "TE modules that ran under an FP8 recipe.", ge=0)
    te_high_precision: Int | None = field(None, "TE modules that ran without one.", ge=0)
    te_outside_fp8: list[Str] | None = field(None, "The first 20 of those, by name.")
    te_other: Int | None = field(None, "TE modules without FP8 metadata that ran (LayerNorm, RMSNorm): TE ran them, "
                                       "no recipe applies. Absent in records from before 2026-12-03.", ge=0)
    linear_flops: dict[str, Num] | None = field(None, "Per step, the linear layers' GEMM FLOPs (forward and "
                                                      "backward) by the precision they ran in.")
    note: Str | None = field(None, "Why the counts are unknown or partial, in words.")


class Warmup(Part):
    """How the untimed warm-up ended: its ``rule`` (fixed, settled), the ``steps`` it took, whether times settled."""

    rule: Str | None = field(None, "fixed or settled.")
    steps: Int | None = field(None, "Warm-up steps run.", ge=0)
    settled: Bool | None = field(None, "Whether the last two steps agreed (settled rule).")
    floor: Int | None = field(None, "Fewest warm-up steps.", ge=0)
    ceiling: Int | None = field(None, "Most warm-up steps.", ge=0)
    rtol: Num | None = field(None, "Agreement the settled rule asks for.", ge=0)
    step_ms: list[Num] | None = field(None, "Each warm-up step's milliseconds (settled rule).")


class Launch(Part):
    """How the case's process started: ``method`` prestarted or cold, and what a pre-started worker's imports cost."""

    method: Annotated[Str, OneOf("prestarted", "cold")] | None = field(None, "prestarted or cold.")
    family: Str | None = field(None, "What a pre-started worker imported (torch, te).")
    preload_s: Num | None = field(None, "A pre-started worker's whole import time, wall-clock: time it was stopped "
                                  "(paused_s) while still importing is in it.", ge=0)
    preload_failed: list[Str] | None = field(None, "Modules a pre-started worker could not import.")
    waited_s: Num | None = field(None, "How long it sat ready before its case arrived (0: during the imports).", ge=0)
    hidden_s: Num | None = field(None, "The part of preload_s done before the case arrived: in no case's time.", ge=0)
    paused_s: Num | None = field(None, "Seconds the pre-started worker was stopped while earlier cases' timed "
                                 "steps ran.", ge=0)
    after_previous_s: Num | None = field(None, "Seconds from the previous case's record on the same device to this "
                                         "case's hand-off.", ge=0)

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


def _phase(doc: str, label: str, column: str, color: str) -> Any:
    # label and colour: the harness-cost chart's legend; column: its table's header.
    return field(None, doc, ge=0, show={"label": label, "column": column, "color": color})


class Phases(Part):
    """Where one case's time went, in seconds: the harness-cost section shows every phase declared here."""

    startup_s: Num | None = _phase("Process and CUDA start (imports too when the worker started cold).",
                                   "start-up", "start-up s", "#7f7f7f")
    build_s: Num | None = _phase("Model, data and optimizer built.", "build", "build s", "#bcbd22")
    warmup_s: Num | None = _phase("Untimed warm-up steps.", "warm-up", "warm-up s", "#ff7f0e")
    measure_s: Num | None = _phase("The timed steps.", "measured steps", "measured s", "#2ca02c")
    profile_s: Num | None = _phase("Profiled extra steps (never timed ones).", "profile", "profile s", "#9467bd")
    validate_s: Num | None = _phase("Held-out validation.", "validate", "validate s", "#17becf")
    replicas_s: Num | None = _phase("A reference mode's untimed runs at other seeds (reference_seeds).",
                                    "reference seeds", "seeds s", "#8c564b")
    twins_s: Num | None = _phase("A reference mode's untimed twin runs at its own seed (reference_twins).",
                                 "reference twins", "twins s", "#e377c2")


class Setup(Part):
    """How the case was set up: optimizer, master weights, compile, graphs, precision (text for the report)."""

    family: Str | None = field(None, "pt or te.")
    optimizer: Str | None = field(None, "The optimizer, in words (AdamW fused, TE's FusedAdam with master weights).")
    master_weights: Str | None = field(None, "Where the fp32 master weights live (the policy every mode shares).")
    compile: Str | None = field(None, "torch.compile's mode, when the case compiles.")
    graphs: Str | None = field(None, "What CUDA graphs capture, when the case uses them.")
    tf32_matmul: Bool | None = field(None, "Whether fp32 matmuls may use TF32 (CUDA).")
    amp_dtype: Str | None = field(None, "torch.autocast's dtype (bfloat16, or float16 where bf16 is missing).")
    grad_scaler: Bool | None = field(None, "Whether a GradScaler runs (fp16 autocast only).")
    fp8_recipe: Str | None = field(None, "TE's FP8 recipe object, as repr() prints it.")
    fp8_library: Str | None = field(None, "Whose FP8: te or torchao (FP8 modes only).")
    fp8_conversion: Str | None = field(None, "AO-FP8: which nn.Linear layers torchao converted, which it kept and why.")
    fp8_converted: Int | None = field(None, "AO-FP8: linear layers converted to torchao's Float8Linear.", ge=0)
    fp8_fsdp_all_gather: Bool | None = field(None, "AO-FP8 under FSDP2: weights all-gathered in FP8.")
    fp8_calibration: Str | None = field(None, "Delayed scaling's calibration passes before training, in words.")
    fp8_weight_transpose: Str | None = field(None, "FP8 weights: how their cached transposes follow the optimizer.")
    lr_schedule: Str | None = field(None, "The learning-rate schedule, in words (a warm-up; constant otherwise).")
    grad_clip: Str | None = field(None, "Gradient clipping before each optimizer step, in words (settings grad_clip).")
    test_slowdown: Num | None = field(None, "TEBENCH_TEST_SLOWDOWN's factor, when set.", ge=1)
    test_mutation: Str | None = field(None, "TEBENCH_TEST_FAULT's self-test mutation applied to this case, and what "
                                            "it did. Parity judges such a case but never takes it as a reference.")


class Updates(Part):
    """Which parameter tensors training left exactly unchanged (parity's frozen-layer check)."""

    tensors: Int | None = field(None, "Parameter tensors.", ge=0)
    unchanged: Int | None = field(None, "Of them, left exactly unchanged by training.", ge=0)
    unchanged_names: list[Str] | None = field(None, "The first of their names.")
    method: Str | None = field(None, "How 'unchanged' was decided: bits (every element's bit pattern, exactly); "
                                    "missing in older records, whose fp32 (sum, sum of squares) checksum could "
                                    "not see updates below one ulp of the sum.")


class FP8State(Part):
    """Delayed scaling's state over training: per layer and quantizer, the scale and amax at sampled steps."""

    steps: list[Annotated[Int, Interval(ge=0)]] = field(list, "The steps sampled.", required=True)
    # An overflow is what the flags report: non-finite scales and amaxes are data here.
    layers: dict[str, dict[str, dict[str, list[AnyNum]]]] = field(
          dict, "layer -> quantizer (fwd.gemm1.input …) -> {scale, amax}: one value per sampled step.",
          required=True)
    flags: list[Str] | None = field(None, "Scales that collapsed or overflowed, in words.")


class RankResult(Part):
    """One rank of a data-parallel case."""

    rank: Int = field(0, "The rank.", ge=0, required=True)
    device: Str | None = field(None, "The rank's device (cuda:N, or the CPU).")
    median_ms: Num = field(0.0, "Its median step time.", ge=0, required=True)
    tokens_per_s: Num = field(0.0, "Its tokens per second.", ge=0, required=True)
    peak_allocated_bytes: Num | None = field(None, "Its CUDA allocator peak.", ge=0, le=MAX_BYTES)
    peak_rss_bytes: Num | None = field(None, "Its peak RSS (CPU).", ge=0, le=MAX_BYTES)
    final_loss: AnyNum | None = field(None, "Its last step's loss.")
    param_checksum: AnyNum | None = field(None, "A checksum of its parameters (replicas must agree).")


class Distributed(Part):
    """A data-parallel case: each rank's numbers and whether the replicas stayed equal."""

    parallel: Str | None = field(None, "ddp or fsdp2.")
    world_size: Int | None = field(None, "Ranks.", ge=1)
    backend: Str | None = field(None, "nccl or gloo.")
    per_rank: list[RankResult] | None = field(None, "Each rank's numbers, by rank.")
    aggregate_tokens_per_s: Num | None = field(None, "Sum over ranks.", ge=0)
    replicas_in_sync: Bool | None = field(None, "DDP: every rank's parameters agree after training.")
    note: Str | None = field(None, "What the numbers mean or why some are missing.")


class Energy(Part):
    """The GPU's energy, power, clocks and clock-event reasons over the timed steps, from NVML
    (:mod:`tebench.worker.energy`); ``unavailable`` says why where there is no reading."""

    method: Annotated[Str, OneOf("counter", "power_integral")] | None = field(
        None, "counter (NVML's total-energy counter) or power_integral (sampled power integrated, where the counter "
              "stood still or is missing).")
    energy_j: Num | None = field(None, "Joules over the timed steps.", ge=0)
    j_per_step: Num | None = field(None, "Joules per timed step.", ge=0)
    tokens_per_j: Num | None = field(None, "Tokens trained per joule (the parent, from the tokens of a step).", ge=0)
    window_s: Num | None = field(None, "Seconds of the window (the timed steps, edges synchronized).", ge=0)
    steps: Int | None = field(None, "Timed steps in the window.", ge=0)
    samples: Int | None = field(None, "NVML samples taken in it.", ge=0)
    avg_power_w: Num | None = field(None, "Average power over the samples (W).", ge=0)
    power_limit_w: Num | None = field(None, "The enforced power limit (W).", ge=0)
    max_sm_clock_mhz: Num | None = field(None, "The GPU's maximum SM clock (MHz).", ge=0)
    max_mem_clock_mhz: Num | None = field(None, "The GPU's maximum memory clock (MHz).", ge=0)
    sm_clock_mhz: dict[str, Num] | None = field(None, "SM clock percentiles over the samples: p10, p50, p90.")
    mem_clock_mhz: dict[str, Num] | None = field(None, "Memory clock percentiles: p10, p50, p90.")
    temperature_c_max: Num | None = field(None, "The highest GPU temperature sampled (C).")
    reason_share: dict[str, Num] | None = field(None, "Share of samples with each clock-event reason set: "
                                                      "power_cap, thermal, hw_slowdown, idle, other.")
    unavailable: Str | None = field(None, "Why there is no energy reading (no CUDA, no NVML, …).")
    note: Str | None = field(None, "How the reading was made, where it was not the counter.")


class Measurements(Part):
    """What a worker measures for one case: its result file, and the measured half of a case record.

    The runner carries every field declared here into the record (:class:`CaseResult`
    extends this class), so a measurement declared here is stored, read and
    validated with no other change.
    """

    status: Annotated[Str, OneOf(*STATUSES)] = field("failed", "ok, skipped, failed, oom, timeout or diverged.",
                                                     required=True)
    reason: Str | None = field(None, "Why a case is not ok, in words.")
    device: Device | None = field(None, "The device the case ran on.")
    memory: Memory | None = field(None, "Peak memory and its parts.")
    loss: Loss | None = field(None, "The loss at every step (and the reference's replicas).")
    validation: Validation | None = field(None, "Held-out validation.")
    gpu_busy: GpuBusy | None = field(None, "The share of the step the GPU was busy (CUDA).")
    kernels: Kernels | None = field(None, "Kernel time by category (CUDA).")
    modules: ModuleCensus | None = field(None, "Which modules ran in FP8 (the module census).")
    fp8_state: FP8State | None = field(None, "FP8 scaling state sampled over the run.")
    setup: Setup | None = field(None, "How the case was set up, in words.")
    phases: Phases | None = field(None, "Seconds of each phase of the case's process.")
    distributed: Distributed | None = field(None, "A data-parallel case's ranks.")
    warmup: Warmup | None = field(None, "How the warm-up ended.")
    launch: Launch | None = field(None, "How the case's process started.")
    updates: Updates | None = field(None, "The frozen-parameter check.")
    timing: Timing | None = field(None, "The timed steps.")
    energy: Energy | None = field(None, "Energy, power, clocks and throttling over the timed steps (CUDA).")

    @staticmethod
    def measured() -> tuple[str, ...]:
        """The fields a worker fills: what the runner copies into the case record."""
        return tuple(Measurements.model_fields)


# --- derived by the parent from the measurements ----------------------------------------------------


class TimeBreakdown(Part):
    """Where one step's GPU time went, by kernel category (derived from ``kernels`` by
    :mod:`tebench.analysis.breakdown`; the categories are :data:`tebench.schema.kernel_rules.CATEGORIES`)."""

    step_ms: Num = field(0.0, "The median timed step.", ge=0, required=True)
    categories_ms: dict[str, Num] = field(dict, "Per step, each category's kernel time (durations summed).",
                                          required=True)
    idle_ms: Num = field(0.0, "The step minus the union of kernel time: the GPU waiting on the host.", ge=0,
                         required=True)
    gemm_ms: dict[str, Num] | None = field(None, "Per step, GEMM time by precision (fp32, bf16, fp8, fp4, unknown).")
    gemm_calls: dict[str, Num] | None = field(None, "Per step, GEMM launches by precision.")
    unclassified: list[KernelTime] | None = field(None, "The longest kernels no rule names (to extend the table).")
    flops: dict[str, Num] | None = field(None, "Per step, the model's FLOPs by the precision of the GEMM that ran "
                                               "them.")
    mfu_mixed: Num | None = field(None, "Model FLOPs time at each precision's peak, over the step.", ge=0)
    rules: Str | None = field(None, "The version of the kernel-name rules that classified it.")


class FP8Proof(Part):
    """For a case in an FP8 mode: whether its GEMMs ran in FP8 (kernels) and its TE modules under a recipe."""

    verdict: Annotated[Str, OneOf("fp8", "partial", "no-fp8", "unproven")] = field(
        "unproven", "fp8, partial (FP8 ran but covered too little: kept out of FP8 figures), no-fp8 (the case is "
                    "failed) or unproven (the evidence is missing).", required=True)
    fp8_gemm_ms: Num | None = field(None, "Per step, GEMM time in FP8 kernels.", ge=0)
    gemm_ms: Num | None = field(None, "Per step, all GEMM time.", ge=0)
    fp8_gemm_calls: Num | None = field(None, "FP8 GEMM launches per step.", ge=0)
    gemm_calls: Num | None = field(None, "GEMM launches per step.", ge=0)
    te_fp8: Int | None = field(None, "TE modules that ran under an FP8 recipe.", ge=0)
    te_high_precision: Int | None = field(None, "TE modules that ran without one.", ge=0)
    fp8_linear_flops_share: Num | None = field(None, "Share of the census's linear-layer FLOPs that ran in "
                                                     "FP8/FP4 (0..1).", ge=0, le=1)
    fp8_gemm_call_share: Num | None = field(None, "FP8/FP4 GEMM launches over all GEMM launches (0..1).",
                                            ge=0, le=1)
    outside_recipe: list[Str] | None = field(None, "TE modules that ran without the recipe, the first 20 by name.")
    note: Str | None = field(None, "What the evidence says, in words.")

    @property
    def fp8_share(self) -> float | None:
        """The share of GEMM time spent in FP8 kernels."""
        return self.fp8_gemm_ms / self.gemm_ms if self.gemm_ms and self.fp8_gemm_ms is not None else None


# --- the verdict -------------------------------------------------------------------------------


class Band(Part):
    """The reference's loss band, step by step: what a judged curve must stay inside."""

    step: list[Int] | None = field(None, "Steps at which the band is sampled (downsampled for the chart).")
    center: list[AnyNum] | None = field(None, "The reference's smoothed loss at those steps.")
    lo: list[AnyNum] | None = field(None, "The band's lower edge.")
    hi: list[AnyNum] | None = field(None, "The band's upper edge.")


class Excursion(Part):
    """The longest run of steps outside the band."""

    start: Int | None = field(None, "First step outside.", ge=0)
    steps: Int | None = field(None, "How many steps.", ge=0)
    peak_step: Int | None = field(None, "Step of the largest deviation.", ge=0)
    side: Str | None = field(None, "above or below.")


class ValidationVerdict(Part):
    """The validation metric against the reference's."""

    verdict: Str | None = field(None, "pass, fail, inconclusive or n/a.")
    reason: Str | None = field(None, "The verdict in words.")
    metric: Str | None = field(None, "The validation metric compared (Validation.metric).")
    value: AnyNum | None = field(None, "The case's value of it.")
    reference: AnyNum | None = field(None, "The reference's (mean over its runs).")
    tolerance: AnyNum | None = field(None, "How far apart the two may be.")


class Parity(Part):
    """The loss-parity verdict of a case against its reference mode (see :mod:`tebench.analysis.parity`)."""

    verdict: Str | None = field(None, "pass, fail, inconclusive, reference or n/a.", required=True)
    reason: Str | None = field(None, "The verdict in words: what was compared, the numbers, and why it passed or "
                                     "failed.")
    reference_mode: Str | None = field(None, "The mode the case was judged against (PT-FP32, else PT-AMP).")
    reference_rounds: Int | None = field(None, "How many runs of the reference (rounds, or seeds under equivalence) "
                                               "the verdict used.", ge=0)
    final: AnyNum | None = field(None, "The case's final loss (the mean of its final window).")
    reference_final: AnyNum | None = field(None, "The reference's final loss, the same way.")
    abs_diff: AnyNum | None = field(None, "final - reference_final (nats, signed).")
    rel_diff: AnyNum | None = field(None, "abs_diff relative to reference_final.")
    tolerance: AnyNum | None = field(None, "How far final may be from reference_final: the band's half-width at the "
                                           "end, or the equivalence margin (nats).")
    rtol: Num | None = field(None, "The parity_rtol setting the band used.")
    atol: Num | None = field(None, "The parity_atol setting the band used.")
    reference_noise: AnyNum | None = field(None, "Band rule: the widest the band got, on the log scale.")
    max_curve_rel_dev: AnyNum | None = field(None, "Band rule: the largest relative distance of the case's curve from "
                                                   "the reference's.")
    max_curve_dev_step: Int | None = field(None, "Band rule: the step where it was.", ge=0)
    direction: Str | None = field(None, "higher or lower: which side of the reference the case ended on.")
    band: Band | None = field(None, "The reference's band as the chart draws it.")
    band_rel: AnyNum | None = field(None, "The band's relative half-width at the end.")
    excursion: Excursion | None = field(None, "Band rule: the longest run of steps outside the band, when it failed "
                                              "the case.")
    excursion_steps: Int | None = field(None, "Band rule: how many steps in a row outside the band fail a "
                                              "case.", ge=0)
    floor: AnyNum | None = field(None, "Band rule: the loss below which values count as equal (from parity_atol). "
                                       "Equivalence: the task's loss floor (nats).")
    noise: dict[str, AnyNum] | None = field(None, "Band rule: the noise terms measured for the band (seed spread, "
                                                  "step noise, ...).")
    reference_learned: Str | None = field(None, "Band rule: whether, and how far, the reference learned, in words.")
    rule: Str | None = field(None, "How the verdict was reached: equivalence (a task with a known floor and a "
                                   "reference trained at several seeds) or absent (the band rule).")
    margin_nats: AnyNum | None = field(None, "Equivalence: the margin the final-window gap must stay within (nats).")
    margin_source: Str | None = field(None, "Equivalence: which term set the margin, in words.")
    margin_rel: AnyNum | None = field(None, "Equivalence: the margin as a share of the reference's final loss: the "
                                            "smallest difference the verdict certifies (pass) or rules out (fail).")
    margin_share: Num | None = field(None, "Equivalence: the margin asked (the parity_margin setting), as a share of "
                                           "the reference's final loss.", ge=0)
    noise_nats: AnyNum | None = field(None, "Equivalence: the gap's noise (nats): the larger of noise_floor_nats "
                                            "and the case's own final-window standard error; sets the interval.")
    noise_floor_nats: AnyNum | None = field(None, "Equivalence: the reference's noise floor (nats): its twins' rms gap "
                                                  "from it (paired), else its seeds' spread (unpaired); sets the "
                                                  "margin's least width.")
    noise_paired: Bool | None = field(None, "Equivalence: whether the noise is paired (twins of the reference's own "
                                            "seed) or unpaired (other seeds).")
    interval: list[AnyNum] | None = field(None, "Equivalence: the gap's interval, gap -+ 2 noise (nats): pass when it "
                                                "lies within the margin, fail when beyond, inconclusive when it "
                                                "straddles the edge.")
    reference_twins: Int | None = field(None, "Equivalence: how many twins of the reference gave the noise.", ge=0)
    seed_sd: AnyNum | None = field(None, "Equivalence: sd of the reference seeds' final-window means (nats).")
    progress_nats: AnyNum | None = field(None, "Equivalence: how far the reference's loss fell from its start (nats).")
    progress: AnyNum | None = field(None, "Equivalence: the reference's share of the way from its start to the "
                                          "task's floor.")
    final_window: list[Int] | None = field(None, "Equivalence: first and last step of the final window.")
    gap_trend_nats: AnyNum | None = field(None, "Equivalence: how much the gap changed over the second half (nats).")
    notes: list[Str] | None = field(None, "Equivalence: what a pass carries beside it (an early excursion that "
                                          "rejoined, a growing gap, a loss spike).")
    spike_step: Int | None = field(None, "Equivalence: the step where the case's loss jumped above the reference's "
                                         "in one step, after the first quarter: the gap rose by more than two "
                                         "margins and ten times its (and the twins') typical one-step move, the "
                                         "case's own loss by more than twice the reference's largest one-step "
                                         "rise, to a gap above its median: a loss spike.", ge=0)
    spike_nats: AnyNum | None = field(None, "Equivalence: how far the gap rose in that step (nats).")
    shift: Int | None = field(None, "Band rule: steps the band may shift left or right (a curve's timing jitter).")
    smoothing: Int | None = field(None, "Band rule: the smoothing window in steps.", ge=0)
    validation: ValidationVerdict | None = field(None, "The validation metric against the reference's (folded into "
                                                       "the verdict).")
    rules: Str | None = field(None, "Which rules judged it: tebench.analysis.parity.PARITY_RULES of the tebench "
                                    "that judged it over the whole run (a finished run, a merge). A reader takes a "
                                    "verdict of its own rules as stored and judges again one without (a running "
                                    "or interrupted run's, judged against the records before it) or of other rules.")

    @property
    def judged(self) -> bool:
        """A verdict that judges the case (pass, fail, inconclusive), not reference or n/a."""
        return self.verdict in JUDGED

    @property
    def passed(self) -> bool:
        """True only for a judged ``pass`` (``inconclusive`` is never a pass)."""
        return self.verdict == "pass"

    @property
    def validation_verdict(self) -> str | None:
        return self.validation.verdict if self.validation else None


def _fp8_option(name: str, required: bool = False) -> Any:
    """A field of :class:`FP8Options` as :class:`FP8Point` declares it: its default, its doc and its lower limit (a
    record was valid under the upper limits of its day); the choices are in the field's type."""
    declared = fields_by_name(FP8Point)[name]
    lower = declared.metadata["min"]
    return field(declared.default, declared.metadata["doc"], required=required,
                 **({"ge": lower} if lower is not None else {}))


class FP8Options(Part):
    """One point on the FP8 recipe axes, from the plan to the stored record; options a recipe ignores are None.

    The plan makes it (:func:`tebench.plan.recipes.fp8_options` drops the options a recipe ignores), the
    worker builds its recipe from it, and the record stores it. Frozen and hashable: one matrix point is
    one case.
    """

    model_config = ConfigDict(frozen=True)
    ALWAYS = ("recipe", "format", "amax_history_len", "amax_compute_algo", "calibration_steps")
    """Every key, null ones too, as a case's FP8 options have always been stored."""

    recipe: Str = _fp8_option("recipe", required=True)
    format: Annotated[Str, OneOf(*FORMATS)] | None = _fp8_option("format")
    amax_history_len: Int | None = _fp8_option("amax_history_len")
    amax_compute_algo: Annotated[Str, OneOf(*AMAX_ALGOS)] | None = _fp8_option("amax_compute_algo")
    calibration_steps: Int | None = _fp8_option("calibration_steps")

    # By value: a point read from a record equals the same point the plan built (the JSON it was read from,
    # which pydantic's own equality compares, is not part of its value).
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FP8Options):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self.extra == other.extra

    def __hash__(self) -> int:
        return hash(tuple(self.__dict__.values()))

    def label(self) -> str:
        """A short, stable label used in case ids, e.g. ``delayed.E4M3.h16.max``."""
        parts = [self.recipe]
        if self.format is not None:
            parts.append(self.format)
        if self.amax_history_len is not None:
            parts.append(f"h{self.amax_history_len}")
        if self.amax_compute_algo is not None:
            parts.append(self.amax_compute_algo)
        if self.calibration_steps:
            parts.append(f"cal{self.calibration_steps}")
        return ".".join(parts)


def _settings(value: Any) -> Any:
    """A case's stored settings as :class:`Settings`: each value checked against its declaration (its type, lower
    limit and choices: a record was valid under the upper limits of its day) and as an integer of a record, and an
    absent one read as its default."""
    if isinstance(value, Settings):
        return value  # a case built here
    if not isinstance(value, dict):
        raise PydanticCustomError("choice", "must be an object, not {kind}", {"kind": kind(value)})
    try:
        check_stored(Settings, value, closed=True)
    except FieldError as exc:
        raise PydanticCustomError("choice", "{why}", {"at": exc.key, "why": str(exc)}) from None
    for key, v in value.items():  # as every integer of a record: SQLite and the JSON writers hold 64 bits
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT:
            raise PydanticCustomError("choice", "is too large for an integer of a record (64 bits)", {"at": key})
    return Settings(**value)  # the values as stored: an integer learning rate stays an integer


StoredSettings = Annotated[InstanceOf[Settings], BeforeValidator(_settings)]
"""A case's settings: :class:`Settings`, from its stored object (:func:`_settings`)."""


class Case(Part):
    """One point of the matrix: workload x size x mode x recipe options, with its settings; the case a record
    describes, as the plan made it.

    The plan builds it (:func:`tebench.plan.matrix.expand`), the worker gets it as JSON (its own
    :meth:`to_dict`) and a record stores it. Frozen and hashable. A mode this tebench does not know has no
    colour, reference order or gate, so a record's is refused, while a workload name may be a user's plugin and
    is any text; the checks that need the plan's registries (the mode, the recipe, a built-in workload's
    dimensions) are in :mod:`tebench.plan.record_checks`. The workload's size dataclass is
    :func:`tebench.workloads.size_of`.
    """

    model_config = ConfigDict(frozen=True)
    ALWAYS = ("workload", "size", "mode", "dims", "fp8", "graphs", "fp8_weights", "parallel", "nproc", "settings")
    """Every key, null ones too, as a case has always been stored."""

    workload: Str = field("", "A built-in workload or a plugin's name.", required=True)
    size: Str = field("", "The size's name in the matrix.", required=True)
    mode: Str = field("", "The precision mode (a known one: plan.record_checks).", required=True)
    dims: dict[str, Num | Str] = field(dict, "The size's dimensions (numbers, a module's name), e.g. d_model.",
                                       required=True)
    fp8: FP8Options | None = field(None, "The FP8 recipe options (FP8 modes only).")
    graphs: Bool | None = field(False, "Whether the step runs as CUDA graphs (the model's layer stack captured).")
    fp8_weights: Bool | None = field(False, "Whether the weights are stored in FP8 (TE's quantized_model_init, "
                                            "with an FP8-aware optimizer).")
    parallel: Annotated[Str, OneOf(*PARALLEL)] = field("single", "single, ddp or fsdp2.")
    nproc: Int = field(1, "Processes (GPUs) the case runs on.", ge=1)
    settings: StoredSettings = field(Settings, "How it was run: the matrix's settings (each one's type as the "
                                               "matrix declares it); absent ones read as their defaults.")

    @property
    def id(self) -> str:
        """Stable identity built from the axes, e.g. ``gpt/tutorial/TE-FP8/delayed.E4M3.h16.max``."""
        return f"{self.workload}/{self.size}/{self.variant}"

    @property
    def variant(self) -> str:
        """The mode plus its options: the 'column' a report compares across (``TE-FP8/delayed.E4M3.h16.max``)."""
        parts = [self.mode]
        if self.fp8 is not None:
            parts.append(self.fp8.label())
        if self.fp8_weights:
            parts.append("fp8-weights")
        if self.graphs:
            parts.append("graphs")
        if self.parallel != "single":
            parts.append(f"{self.parallel}x{self.nproc}")
        return "/".join(parts)

    def replace(self, **changes: Any) -> "Case":
        """This case with ``changes`` (fields by name), built anew: it writes every key."""
        return Case(**{**{name: getattr(self, name) for name in Case.model_fields}, **changes})

    # By value: a case read from a record equals the same case the plan built (the JSON it was read from,
    # which pydantic's own equality compares, is not part of its value).
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Case):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self.extra == other.extra

    def __hash__(self) -> int:
        return hash((self.id, self.settings))


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
    while version < versions.SCHEMA_VERSION:
        # A version that only added optional keys needs no upgrade: readers see them as absent.
        d = UPGRADES.get(version, dict)(d)
        version += 1
    return d


class CaseResult(Measurements):
    """One finished case, one round: identity, outcome and what was measured.

    The measured parts are None when the case did not produce them (skipped,
    failed). Values derived from them are properties computed from the raw
    samples, never a second stored copy.
    """

    ALWAYS = ("type", "case_id", "case", "status", "reason")
    FIRST = ("schema", "schema_version", "type", "run_id", "case_id", "round", "case", "status", "reason", "device",
             "started", "duration_s", "log")

    schema_name: Str | None = field(None, "tebench.results.", alias="schema")
    schema_version: Int | None = field(None, "The schema version the record was written with.")
    type: Str = field("case", "case: the kind of line.")
    run_id: Str | None = field(None, "The run the record belongs to.")
    case_id: Str = field("", "workload/size/mode[/options]: the case's identity.", required=True)
    round: Int | None = field(None, "Which repetition of the matrix (--rounds).", ge=0, le=MAX_ROUNDS - 1)
    case: Case = field(..., "The case as planned.", required=True)
    started: Str | None = field(None, "When the case started (local time with offset).")
    duration_s: Num | None = field(None, "The case's wall-clock seconds, start-up to record.", ge=0)
    log: Str | None = field(None, "Its log, relative to the run directory.")
    throughput: Throughput | None = field(None, "Tokens/s, TFLOP/s and MFU from the median step time.")
    time_breakdown: TimeBreakdown | None = field(None, "The step's time by kernel category and the memory parts "
                                                       "(CUDA).")
    fp8_proof: FP8Proof | None = field(None, "Whether an FP8 case's GEMMs ran in FP8.")
    parity: Parity | None = field(None, "The loss-parity verdict.")
    shard_run_id: Str | None = field(None, "The run id of the shard a merged record came from (run_id is then the "
                                           "merged run's).")
    """The run id of the shard a merged record came from (``run_id`` is then the merged run's)."""

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "record", *, line: bytes | str | None = None) -> "CaseResult":
        """A case record (as :func:`tebench.store.reader.read` returns it, or as the runner builds it)."""
        current = _check_version(d, where)
        return super().from_dict(current, line=line if current is d else None)  # an upgrade is its own order

    @field_validator("case_id")
    @classmethod
    def _an_id(cls, case_id: str) -> str:
        if not case_id or _CONTROL.search(case_id):
            raise PydanticCustomError("case_id", "must be a non-empty id without control characters")
        return case_id

    # --- what the case is
    @property
    def round_no(self) -> int:
        """The round, 0 when not stored."""
        return self.round or 0

    @property
    def workload(self) -> str:
        return self.case.workload

    @property
    def size(self) -> str:
        return self.case.size

    @property
    def mode(self) -> str:
        return self.case.mode

    @property
    def parallel(self) -> str:
        return self.case.parallel

    @property
    def nproc(self) -> int:
        return self.case.nproc

    @property
    def graphs(self) -> bool:
        return bool(self.case.graphs)

    @property
    def fp8_weights(self) -> bool:
        return bool(self.case.fp8_weights)

    @property
    def fp8(self) -> FP8Options | None:
        return self.case.fp8

    @property
    def settings(self) -> Settings:
        return self.case.settings

    @property
    def variant(self) -> str:
        """The mode plus its options (``TE-FP8/delayed.E4M3.h16.max``): its case's, which a case id of a valid record
        ends with."""
        return self.case.variant

    @property
    def device_name(self) -> str:
        """The device model, "?" when not recorded (cases are keyed by it)."""
        return (self.device.name if self.device else None) or "?"

    # --- measured and derived values
    @property
    def timed(self) -> bool:
        """Whether this round finished ok with a step time: the rounds whose times and rates count."""
        return self.status == "ok" and self.timing is not None

    @property
    def samples_ms(self) -> list[float]:
        return self.timing.samples_ms if self.timing else []

    @property
    def summary(self) -> Summary:
        return self.timing.summary if self.timing else Summary()

    @property
    def median_ms(self) -> float | None:
        """The median step time as the summary computes it (:meth:`Summary.of`, else the stored ``timing.stats``)."""
        return self.timing.median_ms if self.timing else None

    @property
    def round_median_ms(self) -> float | None:
        """This round's level as the regression tests take it: :attr:`median_ms` where the round has its
        samples (None where only a stored summary is left)."""
        return self.median_ms if self.samples_ms else None

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


# --- the header --------------------------------------------------------------------------------


class MatrixInfo(Part):
    """The matrix a run ran: its name, file and content hashes, and its data as loaded."""

    name: Str = field("", "The matrix's name.", required=True)
    source: Str | None = field(None, "The file it was loaded from.")
    sha256: Str | None = field(None, "Hash of the matrix as expanded (--resume checks it).")
    text_sha256: Str | None = field(None, "Hash of the file's text.")
    data: dict[str, Any] | None = field(None, "The matrix as loaded, extends merged.")


class CompileCache(Part):
    """The compile cache a run began with."""

    dir: Str | None = field(None, "The cache folder.")
    state: Annotated[Str, OneOf("cold", "warm", "off")] | None = field(None, "cold, warm or off.")
    files: Int | None = field(None, "Files in it at the start.", ge=0)
    bytes: Int | None = field(None, "Its size at the start.", ge=0)
    overridden_by_env: list[Str] | None = field(None, "Cache variables the environment set instead.")


class SideInfo(Part):
    """A side of ``tebench ab``: compare pairs sides by ``id``."""

    id: Str | None = field(None, "The side's identity: compare pairs a base and a head by it.")
    side: Str | None = field(None, "base or head.")
    order: Str | None = field(None, "Which side ran first in each round.")
    python: Str | None = field(None, "The side's Python interpreter.")
    tebench_root: Str | None = field(None, "The tebench source the side ran.")
    env: dict[str, Str] | None = field(None, "Environment variables set for the side.")
    device: Str | None = field(None, "The side's device.")


class Exclusion(Part):
    """One ``[[exclude]]`` rule of the matrix, its reason and how many cases it removed."""

    rule: dict[str, Any] = field(dict, "The rule's keys and values.", required=True)
    reason: Str | None = field(None, "Why, as the matrix says.")
    cases: Int = field(0, "Cases it removed.", ge=0, required=True)


class ShardSource(Part):
    """A shard a merged run was made from."""

    path: Str | None = field(None, "The shard's results file.")
    run_id: Str | None = field(None, "Its run id.")
    shard: list[Int] | None = field(None, "[I, N] of its --shard.")
    device: Str | None = field(None, "Its device.")
    host: Str | None = field(None, "The host it ran on.")


_UNRECORDED = Environment.from_dict({"device_type": "cpu"})
"""The environment of a header that stores none: every field at its default, the CPU's model unknown."""


class RunHeader(Part):
    """A run's header line: identity, command, matrix and environment."""

    schema_name: Str | None = field(None, "tebench.results.", alias="schema")
    schema_version: Int | None = field(None, "The schema version the file was written with.")
    type: Str = field("header", "header: the kind of line.")
    run_id: Str | None = field(None, "The run's id (every record of the run carries it).")
    created: Str | None = field(None, "When the run started (local time with offset).")
    resumed: Bool | None = field(None, "Whether this invocation continued an earlier one (--resume).")
    command: list[Str] | None = field(None, "The command line.")
    cwd: Str | None = field(None, "The working directory.")
    tebench: Str | None = field(None, "tebench's version.")
    matrix: MatrixInfo | None = field(None, "The matrix the run ran.")
    rounds: Int | None = field(None, "--rounds.", ge=1, le=MAX_ROUNDS)
    shard: list[Int] | None = field(None, "[I, N] of --shard I/N.")
    case_ids: list[Str] | None = field(None, "The cases the run was to run, in order.")
    devices: list[Str] | None = field(None, "--devices.")
    excluded: list[Exclusion] | None = field(None, "The matrix's [[exclude]] rules, their reasons and how many cases "
                                                   "each removed.")
    """The matrix's ``[[exclude]]`` rules, their reasons and how many cases each removed."""
    launch: Annotated[Str, OneOf("prestarted", "cold")] | None = field(
        None, "How cases' processes started (--launch); None in runs older than the option.")
    prestart_depth: Int | None = field(None, "Pre-started workers per device when launch is prestarted.", ge=1)
    prestart_pause: Bool | None = field(None, "Whether pre-started workers were stopped during timed steps.")
    compile_cache: CompileCache | None = field(None, "The compile cache the run began with.")
    load_average: list[Num] | None = field(None, "The machine's load average (1, 5, 15 minutes) when the run "
                                               "started: step times on a shared CPU follow it.")
    env: Environment | None = field(None, "The machine, as the probe found it.")
    ab: SideInfo | None = field(None, "tebench ab: which side this run was.")
    merged_from: list[ShardSource] | None = field(None, "tebench merge: the shards this run was made from.")
    missing_shards: list[Any] | None = field(None, "tebench merge: shards of the plan that were not given.")

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "header", *, line: bytes | str | None = None) -> "RunHeader":
        """A run's header record."""
        current = _check_version(d, where)
        return super().from_dict(current, line=line if current is d else None)  # an upgrade is its own order

    @field_validator("shard")
    @classmethod
    def _i_of_n(cls, shard: list[int] | None) -> list[int] | None:
        if shard is not None and len(shard) != 2:
            raise PydanticCustomError("shard", "must be [I, N]")
        return shard

    @property
    def environment(self) -> Environment:
        """The machine the run was on; a header without one reads as an unrecorded CPU."""
        return self.env if self.env is not None else _UNRECORDED

    @property
    def device(self) -> str:
        """The first GPU's name, or ``CPU (<cpu>)`` (:attr:`Environment.device_name`)."""
        return self.environment.device_name

    @property
    def peak_tflops(self) -> PeakRates | None:
        """The datasheet peaks MFU is computed against, None for an unknown GPU."""
        return self.environment.peak_tflops

    @property
    def matrix_name(self) -> str | None:
        return self.matrix.name if self.matrix else None

    @property
    def concurrent(self) -> bool:
        """The run executed several cases at once (``--devices`` with more than one GPU)."""
        return len(self.devices or []) > 1
