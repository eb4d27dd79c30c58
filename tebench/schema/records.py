"""Typed result records: every line of ``results.jsonl``, declared once, for the worker and the parent.

* :class:`Measurements`: what a worker measures for one case (its result file);
* :class:`CaseResult`: one finished case, one round, as stored: the worker's
  measurements plus the runner's identity, statistics and verdicts;
* :class:`RunHeader`: a run's identity and environment (the ``header`` line).

Each record is made of parts (:class:`Timing`, :class:`Memory`, :class:`Loss`,
:class:`Phases` …). A field is declared once, on its part, with its type (the
annotation) and, where it has them, its limits (``knob`` metadata). From those
declarations come reading (:meth:`_Part.from_dict`: nested parts become their
types), writing (:meth:`_Part.to_dict`) and validation (:meth:`_Part.check`, see
:mod:`tebench.schema.validate`): a new measured field is one line here.

``to_dict(from_dict(d)) == d``, key order included: keys this tebench does not
know (written by a newer one) are kept in ``extra`` and written back unchanged.
A record's schema version is checked as in :func:`tebench.schema.version.check_version`;
upgrades of an older version go in :data:`UPGRADES`.

Torch-free. The values derived over rounds and runs (pooled medians, parity
judged again) are in :mod:`tebench.store.run_records`.
"""

from __future__ import annotations

import functools
import types
import typing
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

from tebench.plan.environment import Environment
from tebench.plan.matrix import PARALLEL, Settings
from tebench.plan.modes import MODES
from tebench.plan.recipes import AMAX_ALGOS, FORMATS, RECIPES
from tebench.schema import validate
from tebench.schema.knobs import FieldError, check_value, fields_by_name, knob
from tebench.schema import version as versions
from tebench.schema.version import SCHEMA, STATUSES, RecordError, check_version

UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
"""``version -> function`` turning a record of that schema version into one of the next version.

Empty while ``versions.SCHEMA_VERSION`` is 1: nothing stored has changed meaning yet. A version
without an entry is read as it is (a bump that only added optional keys needs none).
"""


def _options(hint: Any) -> tuple[Any, ...]:
    """The types a field may hold: a union's members, else the hint itself (``list[KernelTime]`` is one type)."""
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


class _Part:
    """A dataclass read from a JSON object: declared keys become fields, the rest stay in ``extra``.

    ``_keys`` remembers which keys the object had and in which order, so that a
    key stored as null stays null, a key never stored stays absent, and
    ``to_dict`` writes the keys back in the order they were read.
    """

    ALWAYS: ClassVar[tuple[str, ...]] = ()
    """Fields written even when None (records built here, not read from a file)."""
    FIRST: ClassVar[tuple[str, ...]] = ()
    """Fields written first in a record built here (identity before measurements, for a human reading the line)."""

    extra: dict[str, Any]
    _keys: tuple[str, ...]

    @classmethod
    @functools.cache
    def _names(cls) -> tuple[str, ...]:
        return tuple(name for name, _, _ in validate.declared(cls))

    @classmethod
    @functools.cache
    def parts(cls) -> dict[str, type["_Part"]]:
        """The fields that hold a nested part (derived from the annotations: ``Timing | None`` …)."""
        out = {}
        for name, hint, _ in validate.declared(cls):
            for option in _options(hint):
                if isinstance(option, type) and issubclass(option, _Part):
                    out[name] = option
        return out

    @classmethod
    @functools.cache
    def list_parts(cls) -> dict[str, type["_Part"]]:
        """The fields that hold a list of parts (``list[KernelTime] | None`` …): read back as typed parts."""
        out = {}
        for name, hint, _ in validate.declared(cls):
            for option in _options(hint):
                if typing.get_origin(option) is list:
                    (item,) = typing.get_args(option) or (None,)
                    if isinstance(item, type) and issubclass(item, _Part):
                        out[name] = item
        return out

    @classmethod
    def check(cls, d: Any, path: str = "") -> None:
        """RecordError unless ``d`` has the declared shape at every depth (see :mod:`tebench.schema.validate`)."""
        validate.check(cls, d, path)

    @classmethod
    def rules(cls, d: dict[str, Any], path: str) -> None:
        """Checks across fields that a type cannot say (none by default)."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]):
        """The part of a JSON object; unknown keys are kept in ``extra``."""
        if not isinstance(d, dict):
            raise RecordError(cls.__name__, d, "must be an object")
        parts, lists = cls.parts(), cls.list_parts()
        kwargs: dict[str, Any] = {}
        for name in cls._names():
            if name in d:
                value = d[name]
                part = parts.get(name)
                item = lists.get(name)
                if part is not None and isinstance(value, dict):
                    value = part.from_dict(value)
                elif item is not None and isinstance(value, list):
                    value = [item.from_dict(v) if isinstance(v, dict) else v for v in value]
                kwargs[name] = value
        extra = {k: v for k, v in d.items() if k not in kwargs}
        return cls(**kwargs, extra=extra, _keys=tuple(d))  # type: ignore[call-arg]

    def stored(self, key: str, default: Any = None) -> Any:
        """A field or extra key as stored: ``default`` only when it was never stored (a stored null stays None)."""
        if key in self.extra:
            return self.extra[key]
        value = getattr(self, key, None)
        return value if (value is not None or key in self._keys) else default

    def get(self, key: str, default: Any = None) -> Any:
        """A field or extra key, ``default`` when absent or null: dict-style reading for tables that show any key."""
        value = self.stored(key)
        return default if value is None else value

    def __getitem__(self, key: str) -> Any:
        """``part[key]`` reads as the JSON object would (KeyError when the key was never stored)."""
        value = self.stored(key, KeyError)
        if value is KeyError:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        """``key in part``: whether the JSON object holds ``key`` (a stored null counts)."""
        return isinstance(key, str) and self.stored(key, KeyError) is not KeyError

    def to_dict(self) -> dict[str, Any]:
        """The JSON object again: the keys read, in their order; new keys after them."""
        out: dict[str, Any] = {}
        names = self._names()
        if not self._keys and self.FIRST:
            names = [*self.FIRST, *(n for n in names if n not in self.FIRST)]
        for name in names:
            value = getattr(self, name)
            if value is None and name not in self._keys and name not in self.ALWAYS:
                continue
            if isinstance(value, _Part):
                value = value.to_dict()
            elif isinstance(value, list) and any(isinstance(v, _Part) for v in value):
                value = [v.to_dict() if isinstance(v, _Part) else v for v in value]
            out[name] = value
        out.update(self.extra)
        if not self._keys:
            return out
        order = {k: i for i, k in enumerate(self._keys)}
        return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))


def _part(cls: type) -> type:
    """``@dataclass`` with the two bookkeeping fields of :class:`_Part` appended."""
    if "extra" not in getattr(cls, "__dataclass_fields__", {}):
        cls.__annotations__ = {**cls.__annotations__, "extra": "dict[str, Any]", "_keys": "tuple[str, ...]"}
        cls.extra = field(default_factory=dict)
        cls._keys = field(default=(), repr=False, compare=False)
    return dataclass(cls)


def _seconds(doc: str) -> Any:
    return knob(None, doc, min=0)


# --- parts a worker measures ---------------------------------------------------------------------


@_part
class Device(_Part):
    """Where the case ran: ``type`` (cuda, cpu), the model ``name``, and for a GPU its ``uuid``, index …"""

    type: str | None = knob(None, "cuda or cpu.")
    name: str | None = knob(None, "The device model (cases are keyed by it).")
    uuid: str | None = knob(None, "The GPU's UUID: tells two GPUs of one model apart.")
    index: int | None = knob(None, "The CUDA device index the worker saw.", min=0)
    capability: list[int] | None = knob(None, "Compute capability [major, minor].")
    memory_bytes: int | None = knob(None, "The GPU's memory.", min=0)
    assigned: str | None = knob(None, "The --devices slot that ran it (set by the runner).")
    visible_devices: str | None = knob(None, "CUDA_VISIBLE_DEVICES in the worker.")


@_part
class Summary(_Part):
    """Median, its interquartile interval (``p25`` … ``p75``), spread and extremes of step times (ms).

    What :func:`tebench.analysis.stats.summarize` returns; all None for no samples.
    """

    n: int | None = knob(None, "Number of samples.", min=0)
    median: float | None = knob(None, "Median (ms).")
    mean: float | None = knob(None, "Mean (ms).")
    stdev: float | None = knob(None, "Sample standard deviation (ms).")
    min: float | None = knob(None, "Fastest sample (ms).")
    max: float | None = knob(None, "Slowest sample (ms).")
    p10: float | None = knob(None, "10th percentile (ms).")
    p25: float | None = knob(None, "25th percentile (ms).")
    p75: float | None = knob(None, "75th percentile (ms).")
    p90: float | None = knob(None, "90th percentile (ms).")
    iqr: float | None = knob(None, "p75 - p25 (ms).")
    iqr_rel: float | None = knob(None, "iqr / median: the relative spread.")

    @classmethod
    def of(cls, samples: Sequence[float]) -> "Summary":
        """The summary of some per-step times (``stats.summarize``)."""
        from tebench.analysis import stats  # numpy: only where a summary is computed

        return cls.from_dict(stats.summarize(samples))


@_part
class Timing(_Part):
    """Per-step times of one round, as measured (milliseconds), and the summary stored with them."""

    samples_ms: list[float] = knob(list, "Each timed step's milliseconds, in order.", nonempty=True, required=True,
                                   items_min=0)
    timer: str | None = knob(None, "cuda_events (GPU timeline) or perf_counter (CPU).")
    wall_ms_per_step: float | None = knob(None, "Wall-clock milliseconds per timed step, host included.", min=0)
    stats: Summary | None = knob(None, "The summary of samples_ms as the runner stored it (readers recompute it "
                                       "from the samples).")
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

    tokens_per_step: float | None = knob(None, "Tokens one step trains on (all ranks).", min=0)
    tokens_per_s: float | None = knob(None, "At the median step time.", min=0)
    flops_per_step: float | None = knob(None, "Model FLOPs of one step (all ranks).", min=0)
    tflops: float | None = knob(None, "Achieved TFLOP/s at the median step time.", min=0)
    mfu: float | None = knob(None, "tflops over the device's dense BF16 peak.", min=0)
    mfu_basis: str | None = knob(None, "Which peak MFU is against, and its source.")


@_part
class Memory(_Part):
    """Memory peaks: CUDA allocator peaks on a GPU, the process peak RSS on a CPU."""

    kind: str | None = knob(None, "cuda or cpu.")
    peak_allocated_bytes: float | None = knob(None, "torch.cuda.max_memory_allocated over the timed steps.", min=0)
    peak_reserved_bytes: float | None = knob(None, "torch.cuda.max_memory_reserved over the timed steps.", min=0)
    peak_rss_bytes: float | None = knob(None, "The process's peak resident set (CPU).", min=0)
    param_count: int | None = knob(None, "Parameters of the model trained.", min=0)
    # What the memory held between steps is made of (CUDA; each storage counted once):
    between_steps_bytes: float | None = knob(None, "torch.cuda.memory_allocated after the last timed step.", min=0)
    params_bytes: float | None = knob(None, "Parameters kept in high precision.", min=0)
    fp8_weight_bytes: float | None = knob(None, "FP8 weights (fp8_weights) and TE's cached FP8 copies and "
                                                "transposes of weights.", min=0)
    grads_bytes: float | None = knob(None, "Gradients (and TE's main_grad buffers).", min=0)
    optimizer_bytes: float | None = knob(None, "The optimizer's state (moments, master weights).", min=0)

    @property
    def peak_bytes(self) -> float | None:
        """A case's peak memory: CUDA max allocated on a GPU, the process peak RSS on a CPU."""
        return self.peak_allocated_bytes or self.peak_rss_bytes


@_part
class Loss(_Part):
    """The loss of every training step, and its first and final values (final: a window's mean)."""

    # A diverged run's curve legitimately holds NaN or inf: kept (and restored from the writer's nulls).
    per_step: list[float] = knob(list, "The loss of every step, warm-up included.", finite=False, required=True)
    warmup_steps: int | None = knob(None, "How many of the first steps were warm-up.", min=0)
    first: float | None = knob(None, "The first step's loss.", finite=False)
    final: float | None = knob(None, "The mean of the last steps (parity.final_loss).", finite=False)
    replicas: list[list[float]] | None = knob(
        None, "A reference mode's extra training runs at other seeds (the reference_seeds setting), untimed: "
              "the loss of every step of each. Their spread is the seed-to-seed noise that parity's "
              "equivalence margin compares a case's difference with.", finite=False)
    replica_seeds: list[int] | None = knob(None, "The seed of each of the replicas, in order.", min=0)


@_part
class Validation(_Part):
    """Held-out validation: ``metric`` names the key that holds its value (a workload adds its own keys)."""

    metric: str | None = knob(None, "The key holding the validation value (greedy_accuracy, heldout_mse …).")
    kind: str | None = knob(None, "What was validated.")
    count: int | None = knob(None, "How many examples.", min=0)
    greedy_accuracy: float | None = knob(None, "GPT/Llama: share of greedily generated tokens that continue the "
                                               "stride.", min=0, max=1)
    sequences_exact: float | None = knob(None, "Share of sequences generated exactly.", min=0, max=1)
    prompt_tokens: int | None = knob(None, "Prompt length of the generation check.", min=0)
    generated_tokens: int | None = knob(None, "Tokens generated per sequence.", min=0)
    heldout_mse: float | None = knob(None, "Distillation: MSE on held-out batches.", min=0)
    heldout_loss: float | None = knob(None, "GPT/Llama on the zipf-markov task: mean cross-entropy (nats per token) "
                                            "on held-out batches of the source.", min=0)
    floor: float | None = knob(None, "The task's exact loss floor (the source's entropy rate, nats per token): "
                                     "no model can do better without a leak.", min=0)
    unigram_entropy: float | None = knob(None, "What a model that learned token frequencies only reaches (nats).",
                                         min=0)
    uniform_loss: float | None = knob(None, "ln(vocab): the loss of predicting every token alike (nats).", min=0)
    causal_kl: float | None = knob(None, "GPT/Llama: mean KL (nats) by which the predictions at a held-out "
                                         "sequence's first half moved when its second half was replaced: 0 in a "
                                         "causal model.", finite=False)
    batch_kl: float | None = knob(None, "GPT/Llama: mean KL (nats) by which a sequence's predictions moved when "
                                        "the other sequences of its batch changed: 0 unless attention runs across "
                                        "the batch.", finite=False)
    context_kl: float | None = knob(None, "GPT/Llama: mean KL (nats) by which the predictions right after every "
                                          "eighth token moved when that token was replaced: as large as the "
                                          "reference's in a model whose attention mixes positions, 0 in one "
                                          "whose attention never does.", finite=False)
    structure_fp8: str | None = knob(None, "How the structural checks (causal_kl, batch_kl, context_kl) ran: "
                                           "off (FP8 switched off for them), none (no FP8 layer), on (FP8 weights "
                                           "kept it on). Absent in records from before 2026-12-03's change: "
                                           "they ran with the case's FP8.", choices=("off", "none", "on"))
    replicas: list[float] | None = knob(None, "A reference mode's replicas (Loss.replicas): the same metric for "
                                              "each, on the same held-out data.", finite=False)

    @classmethod
    def rules(cls, d: dict[str, Any], path: str) -> None:
        # Parity compares the metric's value with the reference's: it must be a number.
        metric = d.get("metric")
        if isinstance(metric, str) and metric in d:
            validate.value(float | None, d[metric], f"{path}.{metric}")

    @property
    def value(self) -> Any:
        return self.stored(self.metric) if self.metric else None


@_part
class GpuBusy(_Part):
    """Fraction of the step the GPU was busy (kernel time from a profiled window)."""

    busy_fraction: float | None = knob(None, "Kernel time over the median step time, at most 1.", min=0, max=1)
    kernel_ms_per_step: float | None = knob(None, "Union of kernel intervals per profiled step.", min=0)
    method: str | None = knob(None, "How it was measured.")
    profiled_steps: int | None = knob(None, "Extra steps profiled (never timed ones).", min=0)
    kernels_seen: int | None = knob(None, "Kernel and copy intervals in the profile.", min=0)


@_part
class KernelTime(_Part):
    """One kernel name's GPU time in the profiled extra steps."""

    name: str = knob("", "The kernel's name as the profiler gives it (kernels, Memcpy …, Memset …).", required=True)
    ms: float = knob(0.0, "Milliseconds per profiled step, durations summed.", min=0, required=True)
    calls: float = knob(0.0, "Launches per profiled step.", min=0, required=True)


@_part
class Kernels(_Part):
    """The GPU kernels of the profiled extra steps by name: what the time breakdown and the FP8 proof are
    derived from (the parent classifies them: :mod:`tebench.analysis.kernel_rules`)."""

    profiled_steps: int = knob(1, "Extra steps profiled (never timed ones).", min=1, required=True)
    union_ms: float = knob(0.0, "Per step, the union of all kernel intervals (concurrent streams counted once).",
                           min=0, required=True)
    kernels: list[KernelTime] = knob(list, "The kernels by time, longest first (at most the 200 longest names).",
                                     required=True)
    rest_ms: float | None = knob(None, "Per step, the kernels past the names kept.", min=0)
    rest_calls: float | None = knob(None, "Their launches per step.", min=0)
    why: str | None = knob(None, "Why these steps were profiled.")
    communication_ms: float | None = knob(None, "Per step, the union of the communication (NCCL) kernels' "
                                                "intervals; absent where none ran.", min=0)
    communication_exposed_ms: float | None = knob(None, "Of it, the time no other kernel ran beside it: the "
                                                        "communication compute did not hide.", min=0)


@_part
class ModuleCensus(_Part):
    """Which modules ran their forward in the profiled steps, and in which precision (forward hooks)."""

    observed: bool = knob(False, "False where hooks see nothing (CUDA graphs, torch.compile): counts unknown.",
                          required=True)
    te_fp8: int | None = knob(None, "TE modules that ran under an FP8 recipe.", min=0)
    te_high_precision: int | None = knob(None, "TE modules that ran without one.", min=0)
    te_outside_fp8: list[str] | None = knob(None, "The first 20 of those, by name.")
    te_other: int | None = knob(None, "TE modules without FP8 metadata that ran (LayerNorm, RMSNorm): TE ran them, "
                                      "no recipe applies. Absent in records from before 2026-12-03.", min=0)
    linear_flops: dict[str, float] | None = knob(None, "Per step, the linear layers' GEMM FLOPs (forward and "
                                                       "backward) by the precision they ran in.")
    note: str | None = knob(None, "Why the counts are unknown or partial, in words.")


@_part
class Warmup(_Part):
    """How the untimed warm-up ended: its ``rule`` (fixed, settled), the ``steps`` it took, whether times settled."""

    rule: str | None = knob(None, "fixed or settled.")
    steps: int | None = knob(None, "Warm-up steps run.", min=0)
    settled: bool | None = knob(None, "Whether the last two steps agreed (settled rule).")
    floor: int | None = knob(None, "Fewest warm-up steps.", min=0)
    ceiling: int | None = knob(None, "Most warm-up steps.", min=0)
    rtol: float | None = knob(None, "Agreement the settled rule asks for.", min=0)
    step_ms: list[float] | None = knob(None, "Each warm-up step's milliseconds (settled rule).")


@_part
class Launch(_Part):
    """How the case's process started: ``method`` prestarted or cold, and what a pre-started worker's imports cost."""

    method: str | None = knob(None, "prestarted or cold.", choices=("prestarted", "cold"))
    family: str | None = knob(None, "What a pre-started worker imported (torch, te).")
    preload_s: float | None = _seconds("A pre-started worker's whole import time, wall-clock: time it was stopped "
                                       "(paused_s) while still importing is in it.")
    preload_failed: list[str] | None = knob(None, "Modules a pre-started worker could not import.")
    waited_s: float | None = _seconds("How long it sat ready before its case arrived (0: during the imports).")
    hidden_s: float | None = _seconds("The part of preload_s done before the case arrived: in no case's time.")
    paused_s: float | None = _seconds("Seconds the pre-started worker was stopped while earlier cases' timed "
                                      "steps ran.")
    after_previous_s: float | None = _seconds("Seconds from the previous case's record on the same device to this "
                                              "case's hand-off.")

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
    return knob(None, doc, min=0, label=label, column=column, color=color)


@_part
class Phases(_Part):
    """Where one case's time went, in seconds: the harness-cost section shows every phase declared here."""

    startup_s: float | None = _phase("Process and CUDA start (imports too when the worker started cold).",
                                     "start-up", "start-up s", "#7f7f7f")
    build_s: float | None = _phase("Model, data and optimizer built.", "build", "build s", "#bcbd22")
    warmup_s: float | None = _phase("Untimed warm-up steps.", "warm-up", "warm-up s", "#ff7f0e")
    measure_s: float | None = _phase("The timed steps.", "measured steps", "measured s", "#2ca02c")
    profile_s: float | None = _phase("Profiled extra steps (never timed ones).", "profile", "profile s", "#9467bd")
    validate_s: float | None = _phase("Held-out validation.", "validate", "validate s", "#17becf")
    replicas_s: float | None = _phase("A reference mode's untimed runs at other seeds (reference_seeds).",
                                      "reference seeds", "seeds s", "#8c564b")


@_part
class Setup(_Part):
    """How the case was set up: optimizer, master weights, compile, graphs, precision (text for the report)."""

    family: str | None = knob(None, "pt or te.")
    optimizer: str | None = knob(None, "The optimizer, in words (AdamW fused, TE's FusedAdam with master weights).")
    master_weights: str | None = knob(None, "Where the fp32 master weights live (the policy every mode shares).")
    compile: str | None = knob(None, "torch.compile's mode, when the case compiles.")
    graphs: str | None = knob(None, "What CUDA graphs capture, when the case uses them.")
    tf32_matmul: bool | None = knob(None, "Whether fp32 matmuls may use TF32 (CUDA).")
    amp_dtype: str | None = knob(None, "torch.autocast's dtype (bfloat16, or float16 where bf16 is missing).")
    grad_scaler: bool | None = knob(None, "Whether a GradScaler runs (fp16 autocast only).")
    fp8_recipe: str | None = knob(None, "TE's FP8 recipe object, as repr() prints it.")
    fp8_library: str | None = knob(None, "Whose FP8: te or torchao (FP8 modes only).")
    fp8_conversion: str | None = knob(None, "AO-FP8: which nn.Linear layers torchao converted, which it kept and why.")
    fp8_converted: int | None = knob(None, "AO-FP8: linear layers converted to torchao's Float8Linear.", min=0)
    fp8_fsdp_all_gather: bool | None = knob(None, "AO-FP8 under FSDP2: weights all-gathered in FP8.")
    fp8_calibration: str | None = knob(None, "Delayed scaling's calibration passes before training, in words.")
    fp8_weight_transpose: str | None = knob(None, "FP8 weights: how their cached transposes follow the optimizer.")
    lr_schedule: str | None = knob(None, "The learning-rate schedule, in words (a warm-up; constant otherwise).")
    test_slowdown: float | None = knob(None, "TEBENCH_TEST_SLOWDOWN's factor, when set.", min=1)
    test_mutation: str | None = knob(None, "TEBENCH_TEST_FAULT's self-test mutation applied to this case, and what "
                                           "it did. Parity judges such a case but never takes it as a reference.")


@_part
class Updates(_Part):
    """Which parameter tensors training left exactly unchanged (parity's frozen-layer check)."""

    tensors: int | None = knob(None, "Parameter tensors.", min=0)
    unchanged: int | None = knob(None, "Of them, left exactly unchanged by training.", min=0)
    unchanged_names: list[str] | None = knob(None, "The first of their names.")
    method: str | None = knob(None, "How 'unchanged' was decided: bits (every element's bit pattern, exactly); "
                                   "missing in older records, whose fp32 (sum, sum of squares) checksum could "
                                   "not see updates below one ulp of the sum.")


@_part
class FP8State(_Part):
    """Delayed scaling's state over training: per layer and quantizer, the scale and amax at sampled steps."""

    steps: list[int] = knob(list, "The steps sampled.", required=True, items_min=0)
    # An overflow is what the flags report: non-finite scales and amaxes are data here.
    layers: dict[str, dict[str, dict[str, list[float]]]] = knob(
        dict, "layer -> quantizer (fwd.gemm1.input …) -> {scale, amax}: one value per sampled step.", finite=False,
        required=True)
    flags: list[str] | None = knob(None, "Scales that collapsed or overflowed, in words.")


@_part
class RankResult(_Part):
    """One rank of a data-parallel case."""

    rank: int = knob(0, "The rank.", min=0, required=True)
    device: str | None = knob(None, "The rank's device (cuda:N, or the CPU).")
    median_ms: float = knob(0.0, "Its median step time.", min=0, required=True)
    tokens_per_s: float = knob(0.0, "Its tokens per second.", min=0, required=True)
    peak_allocated_bytes: float | None = knob(None, "Its CUDA allocator peak.", min=0)
    peak_rss_bytes: float | None = knob(None, "Its peak RSS (CPU).", min=0)
    final_loss: float | None = knob(None, "Its last step's loss.", finite=False)
    param_checksum: float | None = knob(None, "A checksum of its parameters (replicas must agree).", finite=False)


@_part
class Distributed(_Part):
    """A data-parallel case: each rank's numbers and whether the replicas stayed equal."""

    parallel: str | None = knob(None, "ddp or fsdp2.")
    world_size: int | None = knob(None, "Ranks.", min=1)
    backend: str | None = knob(None, "nccl or gloo.")
    per_rank: list[RankResult] | None = knob(None, "Each rank's numbers, by rank.")
    aggregate_tokens_per_s: float | None = knob(None, "Sum over ranks.", min=0)
    replicas_in_sync: bool | None = knob(None, "DDP: every rank's parameters agree after training.")
    note: str | None = knob(None, "What the numbers mean or why some are missing.")


@_part
class Energy(_Part):
    """The GPU's energy, power, clocks and clock-event reasons over the timed steps, from NVML
    (:mod:`tebench.worker.energy`); ``unavailable`` says why where there is no reading."""

    method: str | None = knob(None, "counter (NVML's total-energy counter) or power_integral (sampled power "
                                    "integrated, where the counter stood still or is missing).",
                              choices=("counter", "power_integral"))
    energy_j: float | None = knob(None, "Joules over the timed steps.", min=0)
    j_per_step: float | None = knob(None, "Joules per timed step.", min=0)
    tokens_per_j: float | None = knob(None, "Tokens trained per joule (the parent, from the tokens of a step).", min=0)
    window_s: float | None = knob(None, "Seconds of the window (the timed steps, edges synchronized).", min=0)
    steps: int | None = knob(None, "Timed steps in the window.", min=0)
    samples: int | None = knob(None, "NVML samples taken in it.", min=0)
    avg_power_w: float | None = knob(None, "Average power over the samples (W).", min=0)
    power_limit_w: float | None = knob(None, "The enforced power limit (W).", min=0)
    max_sm_clock_mhz: float | None = knob(None, "The GPU's maximum SM clock (MHz).", min=0)
    max_mem_clock_mhz: float | None = knob(None, "The GPU's maximum memory clock (MHz).", min=0)
    sm_clock_mhz: dict[str, float] | None = knob(None, "SM clock percentiles over the samples: p10, p50, p90.")
    mem_clock_mhz: dict[str, float] | None = knob(None, "Memory clock percentiles: p10, p50, p90.")
    temperature_c_max: float | None = knob(None, "The highest GPU temperature sampled (C).")
    reason_share: dict[str, float] | None = knob(None, "Share of samples with each clock-event reason set: "
                                                       "power_cap, thermal, hw_slowdown, idle, other.")
    unavailable: str | None = knob(None, "Why there is no energy reading (no CUDA, no NVML, …).")
    note: str | None = knob(None, "How the reading was made, where it was not the counter.")


@_part
class Measurements(_Part):
    """What a worker measures for one case: its result file, and the measured half of a case record.

    The runner carries every field declared here into the record (:class:`CaseResult`
    extends this class), so a measurement declared here is stored, read and
    validated with no other change.
    """

    status: str = knob("failed", "ok, skipped, failed, oom, timeout or diverged.", choices=STATUSES,
                       required=True)
    reason: str | None = knob(None, "Why a case is not ok, in words.")
    device: Device | None = knob(None, "The device the case ran on.")
    memory: Memory | None = knob(None, "Peak memory and its parts.")
    loss: Loss | None = knob(None, "The loss at every step (and the reference's replicas).")
    validation: Validation | None = knob(None, "Held-out validation.")
    gpu_busy: GpuBusy | None = knob(None, "The share of the step the GPU was busy (CUDA).")
    kernels: Kernels | None = knob(None, "Kernel time by category (CUDA).")
    modules: ModuleCensus | None = knob(None, "Which modules ran in FP8 (the module census).")
    fp8_state: FP8State | None = knob(None, "FP8 scaling state sampled over the run.")
    setup: Setup | None = knob(None, "How the case was set up, in words.")
    phases: Phases | None = knob(None, "Seconds of each phase of the case's process.")
    distributed: Distributed | None = knob(None, "A data-parallel case's ranks.")
    warmup: Warmup | None = knob(None, "How the warm-up ended.")
    launch: Launch | None = knob(None, "How the case's process started.")
    updates: Updates | None = knob(None, "The frozen-parameter check.")
    timing: Timing | None = knob(None, "The timed steps.")
    energy: Energy | None = knob(None, "Energy, power, clocks and throttling over the timed steps (CUDA).")

    @staticmethod
    def measured() -> tuple[str, ...]:
        """The fields a worker fills: what the runner copies into the case record."""
        return tuple(Measurements._names())


# --- derived by the parent from the measurements ----------------------------------------------------


@_part
class TimeBreakdown(_Part):
    """Where one step's GPU time went, by kernel category (derived from ``kernels`` by
    :mod:`tebench.analysis.breakdown`; the categories are :data:`tebench.analysis.kernel_rules.CATEGORIES`)."""

    step_ms: float = knob(0.0, "The median timed step.", min=0, required=True)
    categories_ms: dict[str, float] = knob(dict, "Per step, each category's kernel time (durations summed).",
                                           required=True)
    idle_ms: float = knob(0.0, "The step minus the union of kernel time: the GPU waiting on the host.", min=0,
                          required=True)
    gemm_ms: dict[str, float] | None = knob(None, "Per step, GEMM time by precision (fp32, bf16, fp8, fp4, unknown).")
    gemm_calls: dict[str, float] | None = knob(None, "Per step, GEMM launches by precision.")
    unclassified: list[KernelTime] | None = knob(None, "The longest kernels no rule names (to extend the table).")
    flops: dict[str, float] | None = knob(None, "Per step, the model's FLOPs by the precision of the GEMM that ran "
                                                "them.")
    mfu_mixed: float | None = knob(None, "Model FLOPs time at each precision's peak, over the step.", min=0)
    rules: str | None = knob(None, "The version of the kernel-name rules that classified it.")


@_part
class FP8Proof(_Part):
    """For a case in an FP8 mode: whether its GEMMs ran in FP8 (kernels) and its TE modules under a recipe."""

    verdict: str = knob("unproven", "fp8, partial (FP8 ran but covered too little: kept out of FP8 figures), "
                        "no-fp8 (the case is failed) or unproven (the evidence is missing).",
                        choices=("fp8", "partial", "no-fp8", "unproven"), required=True)
    fp8_gemm_ms: float | None = knob(None, "Per step, GEMM time in FP8 kernels.", min=0)
    gemm_ms: float | None = knob(None, "Per step, all GEMM time.", min=0)
    fp8_gemm_calls: float | None = knob(None, "FP8 GEMM launches per step.", min=0)
    gemm_calls: float | None = knob(None, "GEMM launches per step.", min=0)
    te_fp8: int | None = knob(None, "TE modules that ran under an FP8 recipe.", min=0)
    te_high_precision: int | None = knob(None, "TE modules that ran without one.", min=0)
    fp8_linear_flops_share: float | None = knob(None, "Share of the census's linear-layer FLOPs that ran in "
                                                      "FP8/FP4 (0..1).", min=0, max=1)
    fp8_gemm_call_share: float | None = knob(None, "FP8/FP4 GEMM launches over all GEMM launches (0..1).",
                                             min=0, max=1)
    outside_recipe: list[str] | None = knob(None, "TE modules that ran without the recipe, the first 20 by name.")
    note: str | None = knob(None, "What the evidence says, in words.")

    @property
    def fp8_share(self) -> float | None:
        """The share of GEMM time spent in FP8 kernels."""
        return self.fp8_gemm_ms / self.gemm_ms if self.gemm_ms and self.fp8_gemm_ms is not None else None


# --- the verdict -------------------------------------------------------------------------------


@_part
class Band(_Part):
    """The reference's loss band, step by step: what a judged curve must stay inside."""

    step: list[int] | None = knob(None, "Steps at which the band is sampled (downsampled for the chart).")
    center: list[float] | None = knob(None, "The reference's smoothed loss at those steps.", finite=False)
    lo: list[float] | None = knob(None, "The band's lower edge.", finite=False)
    hi: list[float] | None = knob(None, "The band's upper edge.", finite=False)


@_part
class Excursion(_Part):
    """The longest run of steps outside the band."""

    start: int | None = knob(None, "First step outside.", min=0)
    steps: int | None = knob(None, "How many steps.", min=0)
    peak_step: int | None = knob(None, "Step of the largest deviation.", min=0)
    side: str | None = knob(None, "above or below.")


@_part
class ValidationVerdict(_Part):
    """The validation metric against the reference's."""

    verdict: str | None = knob(None, "pass, fail, inconclusive or n/a.")
    reason: str | None = knob(None, "The verdict in words.")
    metric: str | None = knob(None, "The validation metric compared (Validation.metric).")
    value: float | None = knob(None, "The case's value of it.", finite=False)
    reference: float | None = knob(None, "The reference's (mean over its runs).", finite=False)
    tolerance: float | None = knob(None, "How far apart the two may be.", finite=False)


@_part
class Parity(_Part):
    """The loss-parity verdict of a case against its reference mode (see :mod:`tebench.analysis.parity`)."""

    verdict: str | None = knob(None, "pass, fail, inconclusive, reference or n/a.", required=True)
    reason: str | None = knob(None, "The verdict in words: what was compared, the numbers, and why it passed or "
                                    "failed.")
    reference_mode: str | None = knob(None, "The mode the case was judged against (PT-FP32, else PT-AMP).")
    reference_rounds: int | None = knob(None, "How many runs of the reference (rounds, or seeds under equivalence) "
                                              "the verdict used.", min=0)
    final: float | None = knob(None, "The case's final loss (the mean of its final window).", finite=False)
    reference_final: float | None = knob(None, "The reference's final loss, the same way.", finite=False)
    abs_diff: float | None = knob(None, "final - reference_final (nats, signed).", finite=False)
    rel_diff: float | None = knob(None, "abs_diff relative to reference_final.", finite=False)
    tolerance: float | None = knob(None, "How far final may be from reference_final: the band's half-width at the "
                                         "end, or the equivalence margin (nats).", finite=False)
    rtol: float | None = knob(None, "The parity_rtol setting the band used.")
    atol: float | None = knob(None, "The parity_atol setting the band used.")
    reference_noise: float | None = knob(None, "Band rule: the widest the band got, on the log scale.", finite=False)
    max_curve_rel_dev: float | None = knob(None, "Band rule: the largest relative distance of the case's curve from "
                                                 "the reference's.", finite=False)
    max_curve_dev_step: int | None = knob(None, "Band rule: the step where it was.", min=0)
    direction: str | None = knob(None, "higher or lower: which side of the reference the case ended on.")
    band: dict[str, Any] | None = knob(None, "The reference's band as the chart draws it.", shape=Band)
    band_rel: float | None = knob(None, "The band's relative half-width at the end.", finite=False)
    excursion: Excursion | None = knob(None, "Band rule: the longest run of steps outside the band, when it failed "
                                             "the case.")
    excursion_steps: int | None = knob(None, "Band rule: how many steps in a row outside the band fail a "
                                             "case.", min=0)
    floor: float | None = knob(None, "Band rule: the loss below which values count as equal (from parity_atol). "
                                     "Equivalence: the task's loss floor (nats).", finite=False)
    noise: dict[str, float] | None = knob(None, "Band rule: the noise terms measured for the band (seed spread, "
                                                "step noise, ...).", finite=False)
    reference_learned: str | None = knob(None, "Band rule: whether, and how far, the reference learned, in words.")
    rule: str | None = knob(None, "How the verdict was reached: equivalence (a task with a known floor and a "
                                  "reference trained at several seeds) or absent (the band rule).")
    margin_nats: float | None = knob(None, "Equivalence: the margin the final-window gap must stay within (nats).",
                                     finite=False)
    margin_source: str | None = knob(None, "Equivalence: which term set the margin, in words.")
    seed_sd: float | None = knob(None, "Equivalence: sd of the reference seeds' final-window means (nats).",
                                 finite=False)
    progress_nats: float | None = knob(None, "Equivalence: how far the reference's loss fell from its start (nats).",
                                       finite=False)
    progress: float | None = knob(None, "Equivalence: the reference's share of the way from its start to the "
                                        "task's floor.", finite=False)
    final_window: list[int] | None = knob(None, "Equivalence: first and last step of the final window.")
    gap_trend_nats: float | None = knob(None, "Equivalence: how much the gap changed over the second half (nats).",
                                        finite=False)
    notes: list[str] | None = knob(None, "Equivalence: what a pass carries beside it (an early excursion that "
                                         "rejoined, a growing gap).")
    shift: int | None = knob(None, "Band rule: steps the band may shift left or right (a curve's timing jitter).")
    smoothing: int | None = knob(None, "Band rule: the smoothing window in steps.", min=0)
    validation: ValidationVerdict | None = knob(None, "The validation metric against the reference's (folded into "
                                                      "the verdict).")

    @property
    def judged(self) -> bool:
        """A verdict that judges the case (pass, fail, inconclusive), not reference or n/a."""
        from tebench.analysis.parity import JUDGED

        return self.verdict in JUDGED

    @property
    def passed(self) -> bool:
        """True only for a judged ``pass`` (``inconclusive`` is never a pass)."""
        from tebench.analysis.parity import passed

        return passed({"parity": {"verdict": self.verdict}})

    @property
    def validation_verdict(self) -> str | None:
        return self.validation.verdict if self.validation else None


@_part
class FP8Info(_Part):
    """A case's FP8 recipe options, as the matrix wrote them (plan.recipes.FP8Options)."""

    recipe: str = knob("", "The recipe's registry name.", choices=tuple(RECIPES), required=True)
    format: str | None = knob(None, "E4M3 or HYBRID.", choices=FORMATS)
    amax_history_len: int | None = knob(None, "Delayed scaling's history.", min=1)
    amax_compute_algo: str | None = knob(None, "max or most_recent.", choices=AMAX_ALGOS)
    calibration_steps: int | None = knob(None, "Calibration passes before training.", min=0)


def _declared_values(cls: type, table: dict[str, Any], path: str, closed: bool) -> None:
    """A matrix table as a record stores it: each value of its declared type and not below its minimum.

    Only the lower limits apply: a record was valid under the upper limits of its day. ``closed``:
    a key ``cls`` does not declare is refused (the matrix refuses it too).
    """
    names = fields_by_name(cls)
    for key, v in table.items():
        if key not in names:
            if closed:
                raise RecordError(f"{path}.{key}", v, f"unknown key (known: {', '.join(names)})")
            continue
        try:
            check_value(cls, key, v, limits=False)
        except FieldError as exc:
            raise RecordError(f"{path}.{key}", v, str(exc)) from None
        lo = names[key].metadata.get("min")
        if lo is not None and isinstance(v, (int, float)) and not isinstance(v, bool) and v < lo:
            raise RecordError(f"{path}.{key}", v, f"must be at least {lo}")


@_part
class CaseInfo(_Part):
    """The case a record describes, as :meth:`tebench.plan.matrix.Case.to_dict` writes it.

    Readers key, group and colour by these: a mode this tebench does not know has no
    colour, reference order or gate, so it is refused, while a workload name may be a
    user's plugin and is any text. Settings are checked by the matrix's own declaration
    (types only: a record was valid under the limits of its day).
    """

    workload: str = knob("", "A built-in workload or a plugin's name.", required=True)
    size: str = knob("", "The size's name in the matrix.", required=True)
    mode: str = knob("", "The precision mode.", choices=tuple(MODES), required=True)
    dims: dict[str, float | str] = knob(dict, "The size's dimensions (numbers, a module's name).", required=True)
    fp8: FP8Info | None = knob(None, "The FP8 recipe options (FP8 modes only).")
    graphs: bool | None = knob(None, "Whether the step runs as CUDA graphs.")
    fp8_weights: bool | None = knob(None, "Whether the weights are stored in FP8 (TE's quantized parameters).")
    parallel: str | None = knob(None, "single, ddp or fsdp2.", choices=PARALLEL)
    nproc: int | None = knob(None, "Processes (GPUs) the case runs on.", min=1)
    settings: dict[str, Any] | None = knob(None, "Its settings (checked by plan.matrix.Settings' types); absent ones "
                                                 "read as their defaults.")

    @classmethod
    def rules(cls, d: dict[str, Any], path: str) -> None:
        # FLOPs and tokens are computed from the dimensions: a built-in workload's are checked by its
        # size's declaration (types only, as for settings); a plugin's are its own business.
        from tebench.workloads import SPECS

        if "settings" in d and d["settings"] is None:
            raise RecordError(f"{path}.settings", None, "must be an object, not null")
        spec = dict.get(SPECS, d.get("workload"))
        if spec is not None:
            _declared_values(spec.size_type, d.get("dims") or {}, f"{path}.dims", closed=False)
        _declared_values(Settings, d.get("settings") or {}, f"{path}.settings", closed=True)


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


@_part
class CaseResult(Measurements):
    """One finished case, one round: identity, outcome and what was measured.

    The measured parts are None when the case did not produce them (skipped,
    failed). Values derived from them are properties computed from the raw
    samples, never a second stored copy.
    """

    ALWAYS = ("type", "case_id", "case", "status", "reason")
    FIRST = ("schema", "schema_version", "type", "run_id", "case_id", "round", "case", "status", "reason", "device",
             "started", "duration_s", "log")

    schema: str | None = knob(None, "tebench.results.")
    schema_version: int | None = knob(None, "The schema version the record was written with.")
    type: str = knob("case", "case: the kind of line.")
    run_id: str | None = knob(None, "The run the record belongs to.")
    case_id: str = knob("", "workload/size/mode[/options]: the case's identity.", required=True)
    round: int | None = knob(None, "Which repetition of the matrix (--rounds).", min=0)
    case: dict[str, Any] = knob(dict, "The case as planned (plan.matrix.Case.to_dict()).", required=True,
                                shape=CaseInfo)
    started: str | None = knob(None, "When the case started (local time with offset).")
    duration_s: float | None = knob(None, "The case's wall-clock seconds, start-up to record.", min=0)
    log: str | None = knob(None, "Its log, relative to the run directory.")
    throughput: Throughput | None = knob(None, "Tokens/s, TFLOP/s and MFU from the median step time.")
    time_breakdown: TimeBreakdown | None = knob(None, "The step's time by kernel category and the memory parts "
                                                      "(CUDA).")
    fp8_proof: FP8Proof | None = knob(None, "Whether an FP8 case's GEMMs ran in FP8.")
    parity: Parity | None = knob(None, "The loss-parity verdict.")
    shard_run_id: str | None = knob(None, "The run id of the shard a merged record came from (run_id is then the "
                                          "merged run's).")
    """The run id of the shard a merged record came from (``run_id`` is then the merged run's)."""

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "record") -> "CaseResult":
        """A case record (as :func:`tebench.store.reader.read` returns it, or as the runner builds it)."""
        return super().from_dict(_check_version(d, where))

    @classmethod
    def rules(cls, d: dict[str, Any], path: str) -> None:
        case_id = d.get("case_id")
        if not case_id or any(unicodedata.category(ch) == "Cc" for ch in case_id):
            raise RecordError("case_id", case_id, "must be a non-empty id without control characters")

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
        import numpy as np

        return float(np.median(self.samples_ms)) if self.samples_ms else None

    def rates(self, peak_tflops: dict[str, Any] | None = None) -> dict[str, Any]:
        """Tokens/s, TFLOP/s and MFU at this round's median step time (see :meth:`CaseRounds.throughput`)."""
        from tebench.store.run_records import CaseRounds

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


# --- the header --------------------------------------------------------------------------------


@_part
class MatrixInfo(_Part):
    """The matrix a run ran: its name, file and content hashes, and its data as loaded."""

    name: str = knob("", "The matrix's name.", required=True)
    source: str | None = knob(None, "The file it was loaded from.")
    sha256: str | None = knob(None, "Hash of the matrix as expanded (--resume checks it).")
    text_sha256: str | None = knob(None, "Hash of the file's text.")
    data: dict[str, Any] | None = knob(None, "The matrix as loaded, extends merged.")


@_part
class CompileCache(_Part):
    """The compile cache a run began with."""

    dir: str | None = knob(None, "The cache folder.")
    state: str | None = knob(None, "cold, warm or off.", choices=("cold", "warm", "off"))
    files: int | None = knob(None, "Files in it at the start.", min=0)
    bytes: int | None = knob(None, "Its size at the start.", min=0)
    overridden_by_env: list[str] | None = knob(None, "Cache variables the environment set instead.")


@_part
class SideInfo(_Part):
    """A side of ``tebench ab``: compare pairs sides by ``id``."""

    id: str | None = knob(None, "The side's identity: compare pairs a base and a head by it.")
    side: str | None = knob(None, "base or head.")
    order: str | None = knob(None, "Which side ran first in each round.")
    python: str | None = knob(None, "The side's Python interpreter.")
    tebench_root: str | None = knob(None, "The tebench source the side ran.")
    env: dict[str, str] | None = knob(None, "Environment variables set for the side.")
    device: str | None = knob(None, "The side's device.")


@_part
class Exclusion(_Part):
    """One ``[[exclude]]`` rule of the matrix, its reason and how many cases it removed."""

    rule: dict[str, Any] = knob(dict, "The rule's keys and values.", required=True)
    reason: str | None = knob(None, "Why, as the matrix says.")
    cases: int = knob(0, "Cases it removed.", min=0, required=True)


@_part
class ShardSource(_Part):
    """A shard a merged run was made from."""

    path: str | None = knob(None, "The shard's results file.")
    run_id: str | None = knob(None, "Its run id.")
    shard: list[int] | None = knob(None, "[I, N] of its --shard.")
    device: str | None = knob(None, "Its device.")
    host: str | None = knob(None, "The host it ran on.")


@_part
class RunHeader(_Part):
    """A run's header line: identity, command, matrix and environment."""

    schema: str | None = knob(None, "tebench.results.")
    schema_version: int | None = knob(None, "The schema version the file was written with.")
    type: str = knob("header", "header: the kind of line.")
    run_id: str | None = knob(None, "The run's id (every record of the run carries it).")
    created: str | None = knob(None, "When the run started (local time with offset).")
    resumed: bool | None = knob(None, "Whether this invocation continued an earlier one (--resume).")
    command: list[str] | None = knob(None, "The command line.")
    cwd: str | None = knob(None, "The working directory.")
    tebench: str | None = knob(None, "tebench's version.")
    matrix: MatrixInfo | None = knob(None, "The matrix the run ran.")
    rounds: int | None = knob(None, "--rounds.", min=1)
    shard: list[int] | None = knob(None, "[I, N] of --shard I/N.")
    case_ids: list[str] | None = knob(None, "The cases the run was to run, in order.")
    devices: list[str] | None = knob(None, "--devices.")
    excluded: list[Exclusion] | None = knob(None, "The matrix's [[exclude]] rules, their reasons and how many cases "
                                                  "each removed.")
    """The matrix's ``[[exclude]]`` rules, their reasons and how many cases each removed."""
    launch: str | None = knob(None, "How cases' processes started (--launch); None in runs older than the option.",
                              choices=("prestarted", "cold"))
    prestart_depth: int | None = knob(None, "Pre-started workers per device when launch is prestarted.", min=1)
    prestart_pause: bool | None = knob(None, "Whether pre-started workers were stopped during timed steps.")
    compile_cache: CompileCache | None = knob(None, "The compile cache the run began with.")
    env: dict[str, Any] | None = knob(None, "The machine, as the probe found it (plan.environment.Environment).",
                                      shape=Environment)
    ab: SideInfo | None = knob(None, "tebench ab: which side this run was.")
    merged_from: list[ShardSource] | None = knob(None, "tebench merge: the shards this run was made from.")
    missing_shards: list[Any] | None = knob(None, "tebench merge: shards of the plan that were not given.")

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "header") -> "RunHeader":
        return super().from_dict(_check_version(d, where))

    @classmethod
    def rules(cls, d: dict[str, Any], path: str) -> None:
        shard = d.get("shard")
        if shard is not None and len(shard) != 2:
            raise RecordError("shard", shard, "must be [I, N]")

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
        return self.matrix.name if self.matrix else None

    @property
    def concurrent(self) -> bool:
        """The run executed several cases at once (``--devices`` with more than one GPU)."""
        return len(self.devices or []) > 1
