"""The registry of precision modes.

A mode is data, not a branch: its fields say which module family builds the
model (plain PyTorch or Transformer Engine), whether torch autocast is on,
whether TE's FP8 autocast wraps the forward pass and whether the model is
compiled. The training loop composes behaviour from these fields, so adding a
mode is one entry in :data:`MODES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tebench.schema.environment import Environment

# Every mode keeps fp32 master weights and fp32 optimizer state; the modes only
# differ in the precision of the compute. Stated in every result record.
MASTER_WEIGHT_POLICY = (
    "fp32 master weights and fp32 AdamW state in every mode; PT-AMP and TE modes compute in "
    "bf16 under torch.autocast (fp16 + GradScaler where bf16 is unsupported); TE-FP8 adds TE's FP8 "
    "autocast around the forward pass; AO-FP8 converts PT-AMP's linear layers with torchao's "
    "convert_to_float8_training (fp32 weights, FP8 GEMMs with dynamic scales)"
)


@dataclass(frozen=True)
class Mode:
    """One precision mode as users see it (e.g. ``TE-FP8``)."""

    name: str
    family: str
    """``pt`` builds plain PyTorch modules, ``te`` builds Transformer Engine modules."""
    amp: bool
    """Run the forward pass under ``torch.autocast`` (bf16, or fp16 where bf16 is missing)."""
    fp8: str | None
    """Whose FP8 the case's recipe is: ``te`` (TE's FP8 autocast wraps the forward pass) or
    ``torchao`` (torchao's float8 training converts the model's ``nn.Linear`` layers); None: no FP8."""
    compile: bool
    """Run the model under ``torch.compile``."""
    description: str
    color: str = "#9467bd"
    """The one colour this mode has in every chart (the default is the colour shared by every
    mode without one of its own, unknown modes included)."""
    reference_rank: int | None = None
    """Loss parity's reference: of the modes with a rank that ran, the lowest rank is the reference."""
    companion: str | None = None
    """When this mode is the reference, runs of the companion mode add their distance from it
    (the cost of lower-precision compute) to the parity band."""
    baseline: str | None = None
    """The report's speedup baseline this mode is: ``amp`` (eager) or ``compile`` (compiled)."""

    def gate(self, env: "Environment") -> str | None:
        """None when this mode can run on ``env``, else the human-readable reason."""
        if self.fp8 == "torchao":
            return self._gate_torchao(env)
        if self.compile and not env.compile.ok:
            return env.compile.reason
        if self.family != "te":
            return None
        gpu = env.gpu
        if env.device_type != "cuda" or gpu is None:
            return f"{self.name} needs a CUDA GPU; none was detected"
        cc = gpu.cc
        if cc < (8, 0):
            return f"{self.name} needs compute capability >= 8.0; {gpu.name} has {cc[0]}.{cc[1]}"
        if env.te is None:
            return f"{self.name} needs Transformer Engine: {env.te_error or 'not installed'}"
        if self.fp8:
            if cc < (8, 9):
                return f"{self.name} needs compute capability >= 8.9; {gpu.name} has {cc[0]}.{cc[1]}"
            if not env.fp8.ok:
                return f"Transformer Engine reports FP8 unavailable: {env.fp8.reason}"
        return None

    def _gate_torchao(self, env: "Environment") -> str | None:
        from tebench.plan.torchao_support import pair_problem

        # The deciding gate first: on a machine with no CUDA GPU, installing torchao would not make it run.
        gpu = env.gpu
        if env.device_type != "cuda" or gpu is None:
            return f"{self.name} needs a CUDA GPU (torchao's FP8 matmul is CUDA-only); none was detected"
        if env.torchao is None:
            return f"{self.name} needs torchao ({env.torchao_error or 'not installed'}; pip install 'tebench[ao]')"
        problem = pair_problem(env.torchao, env.torch or "")
        if problem:
            return f"{self.name}: {problem}"
        cc = gpu.cc
        if cc < (8, 9):
            return f"{self.name} needs compute capability >= 8.9; {gpu.name} has {cc[0]}.{cc[1]}"
        if self.compile and not env.compile.ok:
            return env.compile.reason
        return None


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode("PT-FP32", "pt", amp=False, fp8=None, compile=False, description="plain PyTorch, fp32 compute",
             color="#7f7f7f", reference_rank=0, companion="PT-AMP"),
        Mode("PT-AMP", "pt", amp=True, fp8=None, compile=False,
             description="PyTorch autocast (bf16; fp16 + GradScaler where bf16 is missing)",
             color="#1f77b4", reference_rank=1, baseline="amp"),
        Mode("PT-AMP+compile", "pt", amp=True, fp8=None, compile=True,
             description="PT-AMP under torch.compile: the strongest plain-PyTorch baseline",
             color="#17becf", baseline="compile"),
        Mode("TE-BF16", "te", amp=True, fp8=None, compile=False,
             description="Transformer Engine modules, bf16 compute", color="#2ca02c"),
        Mode("TE-FP8", "te", amp=True, fp8="te", compile=False,
             description="Transformer Engine modules under FP8 autocast with a recipe", color="#d62728"),
        Mode("AO-FP8", "pt", amp=True, fp8="torchao", compile=True,
             description="PT-AMP's model with torchao's float8 training (convert_to_float8_training) under "
                         "torch.compile, with a torchao recipe", color="#ff7f0e"),
    )
}

REFERENCE_MODES = tuple(name for _, name in sorted((m.reference_rank, m.name) for m in MODES.values()
                                                  if m.reference_rank is not None))
"""Loss parity compares every case against the first of these that ran."""

FP8_MODES = tuple(m.name for m in MODES.values() if m.fp8)
"""The modes that compute in FP8: the ones a recipe applies to (each takes its own library's recipes)."""

FP8_LIBRARY_NAMES = {"te": "Transformer Engine", "torchao": "torchao"}
"""The FP8 libraries, as reports name them."""


def baseline(role: str) -> str:
    """The mode that is the report's ``role`` speedup baseline (``amp`` or ``compile``)."""
    found = [m.name for m in MODES.values() if m.baseline == role]
    if len(found) != 1:
        raise LookupError(f"MODES must name exactly one '{role}' baseline, not {found}")
    return found[0]


def is_fp8(mode: str) -> bool:
    """True for a mode that computes in FP8; False for a mode this tebench does not know (an old file's)."""
    return mode in MODES and bool(MODES[mode].fp8)


def fp8_library(mode: str) -> str | None:
    """``te`` or ``torchao`` for an FP8 mode; None otherwise (or for a mode this tebench does not know)."""
    return MODES[mode].fp8 if mode in MODES else None
