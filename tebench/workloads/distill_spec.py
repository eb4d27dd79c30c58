"""The distillation workload's spec: its size, shape rules and per-step counts (no torch).

The model itself is in :mod:`tebench.worker.models.distill`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tebench.schema.knobs import MAX_DIM, knob
from tebench.workloads.spec import divisible_by_16, positive


@dataclass(frozen=True)
class DistillSize:
    """Shape of a distillation case (defaults: the TE tutorial's example)."""

    vocab: int = knob(4096, "Token vocabulary of the embedding.", min=1, max=MAX_DIM)
    hidden: int = knob(512, "Hidden width.", min=1, max=2**17)
    ffn: int = knob(2048, "Hidden width of each block's MLP.", min=1, max=2**19)
    blocks: int = knob(3, "Residual LayerNorm-MLP blocks.", min=1, max=1024)
    seq: int = knob(128, "Tokens per sequence.", min=1, max=MAX_DIM)
    batch: int = knob(8, "Sequences per step.", min=1, max=2**16)


class DistillSpec:
    """Student-teacher distillation with an MSE loss, as the parent process sees it."""

    name = "distill"
    kind = "model"
    size_type = DistillSize
    description = "student MLP learns a frozen teacher's hidden states (MSE)"

    def check(self, s: DistillSize) -> None:
        positive(s, "vocab", "hidden", "ffn", "blocks", "seq", "batch")

    def fp8_problem(self, s: DistillSize) -> str | None:
        return divisible_by_16(tokens=s.batch * s.seq, hidden=s.hidden, ffn=s.ffn)

    def tokens_per_step(self, s: DistillSize) -> int:
        return s.batch * s.seq

    def flops_per_step(self, s: DistillSize) -> float:
        """6 x student matmul parameters x tokens (the teacher runs before timing)."""
        return 6.0 * s.blocks * 2 * s.hidden * s.ffn * self.tokens_per_step(s)
