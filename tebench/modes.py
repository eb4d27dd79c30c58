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
    from tebench.detect import Environment

# Every mode keeps fp32 master weights and fp32 optimizer state; the modes only
# differ in the precision of the compute. Stated in every result record.
MASTER_WEIGHT_POLICY = (
    "fp32 master weights and fp32 AdamW state in every mode; PT-AMP and TE modes compute in "
    "bf16 under torch.autocast (fp16 + GradScaler where bf16 is unsupported); TE-FP8 adds TE's FP8 "
    "autocast around the forward pass"
)


@dataclass(frozen=True)
class Mode:
    """One precision mode as users see it (e.g. ``TE-FP8``)."""

    name: str
    family: str
    """``pt`` builds plain PyTorch modules, ``te`` builds Transformer Engine modules."""
    amp: bool
    """Run the forward pass under ``torch.autocast`` (bf16, or fp16 where bf16 is missing)."""
    fp8: bool
    """Wrap the forward pass in TE's FP8 autocast with the case's recipe."""
    compile: bool
    """Run the model under ``torch.compile``."""
    description: str

    def gate(self, env: "Environment") -> str | None:
        """None when this mode can run on ``env``, else the human-readable reason."""
        if self.compile and not env.compile.ok:
            return env.compile.reason
        if self.family != "te":
            return None
        if env.device_type != "cuda":
            return f"{self.name} needs a CUDA GPU; none was detected"
        cc = env.gpu.capability
        if cc < (8, 0):
            return f"{self.name} needs compute capability >= 8.0; {env.gpu.name} has {cc[0]}.{cc[1]}"
        if env.te is None:
            return f"{self.name} needs Transformer Engine: {env.te_error or 'not installed'}"
        if self.fp8:
            if cc < (8, 9):
                return f"{self.name} needs compute capability >= 8.9; {env.gpu.name} has {cc[0]}.{cc[1]}"
            if not env.fp8.ok:
                return f"Transformer Engine reports FP8 unavailable: {env.fp8.reason}"
        return None


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode("PT-FP32", "pt", amp=False, fp8=False, compile=False, description="plain PyTorch, fp32 compute"),
        Mode("PT-AMP", "pt", amp=True, fp8=False, compile=False,
             description="PyTorch autocast (bf16; fp16 + GradScaler where bf16 is missing)"),
        Mode("PT-AMP+compile", "pt", amp=True, fp8=False, compile=True,
             description="PT-AMP under torch.compile: the strongest plain-PyTorch baseline"),
        Mode("TE-BF16", "te", amp=True, fp8=False, compile=False,
             description="Transformer Engine modules, bf16 compute"),
        Mode("TE-FP8", "te", amp=True, fp8=True, compile=False,
             description="Transformer Engine modules under FP8 autocast with a recipe"),
    )
}

# Loss parity compares every case against the first of these that ran.
REFERENCE_MODES = ("PT-FP32", "PT-AMP")
