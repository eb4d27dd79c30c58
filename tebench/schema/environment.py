"""The machine a run ran on, as the probe finds it and every header stores it: one type from plan to file.

:class:`Environment` is what ``python -m tebench.worker.probe`` builds and prints, what the parent's
gates read (:mod:`tebench.plan.environment` runs the probe and caches its answer) and what a results
file's header holds under ``env``. Its parts: :class:`GPU` (one visible device), :class:`Support`
(whether a feature works here) and :class:`PeakRates` (a GPU model's datasheet peaks).

A stored environment is read as a part like any other: keys a newer tebench wrote ride along and are
written back unchanged. A text field, a number and the peaks may hold null ("not recorded": a
pytest-benchmark file's import leaves most of them so); a list, a table and a support flag may not. One built here writes every field, null or
not, in declaration order: the object the probe has always printed.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from tebench.schema.part import Bool, Int, Limits, Num, OneOf, Part, Str, field

_DEVICE_TYPES = ("cpu", "cuda")


def cpu_device_name(model: str | None) -> str:
    """How results name a CPU: ``CPU (<model>)``, ``CPU (unknown)`` where the model is not known."""
    return f"CPU ({model or 'unknown'})"


class PeakRates(Part):
    """Dense peak TFLOP/s of one GPU model (the vendor's datasheet, no sparsity)."""

    ALWAYS: ClassVar[tuple[str, ...]] = ("match", "bf16", "fp8", "fp32", "source")

    match: Str = field(..., "Words of torch.cuda.get_device_name() that identify the model (whole words: "
                            "\"L4\" is not the L40's entry).", required=True)
    bf16: Num = field(..., "Dense BF16 TFLOP/s (the MFU yardstick).", ge=0, required=True)
    fp8: Num | None = field(None, "Dense FP8 TFLOP/s, None where the GPU has no FP8.", ge=0)
    fp32: Num = field(..., "Dense FP32 TFLOP/s.", ge=0, required=True)
    source: Str = field(..., "Where the figures come from (a datasheet).", required=True)

    def rate(self, precision: str) -> float | None:
        """The dense peak of ``precision`` (bf16, fp8, fp32), None where none is known."""
        value = {"bf16": self.bf16, "fp8": self.fp8, "fp32": self.fp32}.get(precision)
        return None if value is None else float(value)


class GPU(Part):
    """One CUDA device as torch sees it."""

    index: Int = field(..., "The device's index as torch numbers it (after CUDA_VISIBLE_DEVICES).", ge=0,
                       required=True)
    name: Str = field(..., "Its name (torch.cuda.get_device_name).", required=True)
    capability: list[Annotated[Int, Limits(ge=0)]] = field(..., "Compute capability [major, minor].", required=True,
                                                           min_length=2, max_length=2)
    memory_bytes: Int = field(..., "Its total memory.", ge=0, required=True)
    multiprocessors: Int | None = field(0, "Its streaming multiprocessors (0 where not recorded).", ge=0)

    @property
    def cc(self) -> tuple[int, ...]:
        """Its compute capability as a tuple, to compare with ``(8, 9)``."""
        return tuple(self.capability)


class Support(Part):
    """Whether a feature works here, and if not, why (a human-readable reason)."""

    ok: Bool = field(..., "Whether it works here.", required=True)
    reason: Str | None = field("", "Why not, in words (or what was checked).")

    @classmethod
    def yes(cls) -> "Support":
        """It works here."""
        return cls(ok=True, reason="")

    @classmethod
    def no(cls, reason: str) -> "Support":
        """It does not work here, for ``reason``."""
        return cls(ok=False, reason=reason)


def _unprobed(doc: str) -> Any:
    return Field(default_factory=lambda: Support.no("not probed"), description=doc)


class Environment(Part):
    """What tebench detected about the machine it runs on."""

    device_type: Annotated[Str, OneOf(*_DEVICE_TYPES)] = field(..., "cpu or cuda: what the cases run on.",
                                                              required=True)
    gpus: list[GPU] = field(list, "The visible CUDA devices.")
    torch: Str | None = field("", "torch's version.")
    cuda: Str | None = field(None, "The CUDA version torch was built with.")
    cudnn: Str | None = field(None, "cuDNN's version.")
    driver: Str | None = field(None, "The NVIDIA driver's version.")
    te: Str | None = field(None, "Transformer Engine's version, None where it does not import.")
    te_error: Str | None = field(None, "Why TE does not import, in words.")
    te_recipes: list[Str] = field(list, "TE's FP8 recipe classes this TE has.")
    te_api: list[Str] = field(list, "The TE entry points present (old and new names).")
    torchao: Str | None = field(None, "torchao's version, None where it does not import (see torchao_error).")
    torchao_error: Str | None = field(None, "Why torchao does not import, in words.")
    torchao_recipes: list[Str] = field(
        list, "torchao's float8 training recipe names (Float8LinearRecipeName) where it imports.")
    fp8: Support = _unprobed("Whether FP8 (delayed and current scaling) runs here: TE's own check.")
    fp8_block: Support = _unprobed("Whether FP8 block scaling runs here.")
    mxfp8: Support = _unprobed("Whether MXFP8 runs here.")
    nvfp4: Support = _unprobed("Whether NVFP4 runs here.")
    bf16: Bool | None = field(False, "Whether the device supports bf16.")
    compile: Support = _unprobed("Whether torch.compile works here.")
    fsdp2: Support = _unprobed("Whether FSDP2 (fully_shard) is available.")
    python: Str | None = field("", "Python's version.")
    platform: Str | None = field("", "The OS, as platform.platform() gives it.")
    cpu: Str | None = field("", "The CPU's model name.")
    cpu_count: Int | None = field(0, "Logical CPUs.", ge=0)
    cpu_gflops: Num | None = field(
        None, "fp32 matmul GFLOP/s this CPU reached in the probe (a fraction of a second of 512x512 matmuls): "
              "what tebench list estimates CPU cases from.", ge=0)
    hostname: Str | None = field("", "The machine's host name.")
    gpu_clocks: dict[str, dict[str, Str | None]] = field(
        dict, "Per GPU index, nvidia-smi's clock and power fields (text, as nvidia-smi prints them).")
    env_vars: dict[str, Str] = field(
        dict, "Environment variables that change what TE, CUDA or torch do (NVTE_, CUDA_, NCCL_, TORCH_ ...).")
    tebench: Str | None = field(None, "tebench's version.")
    git_commit: Str | None = field(None, "The commit of tebench's source tree, where it is a git checkout.")
    git_dirty: Bool | None = field(None, "Whether that tree had uncommitted changes.")
    peak_tflops: PeakRates | None = field(None, "The GPU's datasheet peaks, None for a GPU without an entry.")
    time: Str | None = field("", "When the probe ran (local time with offset).")

    @property
    def gpu(self) -> GPU | None:
        """The first visible GPU, or None on a CPU-only machine."""
        return self.gpus[0] if self.gpus else None

    @property
    def device_name(self) -> str:
        """The device cases run on, in words: the first GPU's name, else ``CPU (<model>)``.

        A CPU whose model was not recorded is ``CPU (unknown)``: never the parent's own CPU, which
        may not be the machine the run was on."""
        gpu = self.gpu
        return gpu.name if gpu is not None else cpu_device_name(self.cpu)


Environment.ALWAYS = tuple(Environment.model_fields)
"""A probe's answer holds every field, a null one too: what ``tebench env --json`` and a header show."""
