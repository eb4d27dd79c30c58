"""A user-defined tebench workload: regression onto a frozen random "teacher" function.

Everything tebench needs from a workload is here, in one class: a size
dataclass, build (both families, same weights), batches, loss, validation and
FLOPs. The model is a stack of residual blocks ``x + fc2(gelu(fc1(norm(x))))``;
in plain PyTorch they are ``nn.LayerNorm`` + two ``nn.Linear``, with
Transformer Engine one fused ``te.LayerNormMLP``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tebench.workloads.base import (
    Batch,
    SizeError,
    canonical_shapes,
    divisible_by_16,
    init_canonical,
    positive,
    translate_names,
)


@dataclass(frozen=True)
class RegressionSize:
    """The keys a matrix's [sizes.<workload>.<name>] table may set."""

    dim: int = 256
    ffn: int = 1024
    blocks: int = 2
    batch: int = 512


class Block(nn.Module):
    """x + fc2(gelu(fc1(ln(x)))): the canonical (plain PyTorch) block. Its names define the weights."""

    def __init__(self, s: RegressionSize):
        super().__init__()
        self.ln = nn.LayerNorm(s.dim)
        self.fc1 = nn.Linear(s.dim, s.ffn)
        self.fc2 = nn.Linear(s.ffn, s.dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # TE's "gelu" is the tanh approximation: use it here too, so both families compute one function.
        return x + self.fc2(F.gelu(self.fc1(self.ln(x)), approximate="tanh"))


class TEBlock(nn.Module):
    """The same block with Transformer Engine (imported only when a TE mode builds it)."""

    def __init__(self, s: RegressionSize):
        super().__init__()
        import transformer_engine.pytorch as te

        self.mlp = te.LayerNormMLP(s.dim, s.ffn, params_dtype=torch.float32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(x)


# TE parameter name suffix -> canonical name suffix.
TE_NAMES = {
    "mlp.layer_norm_weight": "ln.weight", "mlp.layer_norm_bias": "ln.bias",
    "mlp.fc1_weight": "fc1.weight", "mlp.fc1_bias": "fc1.bias",
    "mlp.fc2_weight": "fc2.weight", "mlp.fc2_bias": "fc2.bias",
}


class Model(nn.Module):
    def __init__(self, blocks: list[nn.Module]):
        super().__init__()
        # ``blocks`` is what CUDA graphs capture (with graph_inputs below).
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def _init_rule(name: str, shape: torch.Size) -> tuple[str, float]:
    """How each canonical parameter starts: norms one, biases zero, weights normal(0, 0.02)."""
    if name.endswith(".bias"):
        return "zeros", 0.0
    if ".ln." in name:
        return "ones", 0.0
    return "normal", 0.02


class RegressionWorkload:
    """Regression onto ``teacher(x) = x + 0.5 * tanh(x @ W)`` for a fixed random ``W``."""

    name = "tinyreg"
    size_type = RegressionSize
    description = "residual MLP regression onto a fixed random function; validated by R^2"

    def check(self, s: RegressionSize) -> None:
        """Raise SizeError(key, value, message) for a size that cannot be built."""
        positive(s, "dim", "ffn", "blocks", "batch")
        if s.dim < 2:
            raise SizeError("dim", s.dim, "dim must be at least 2")

    def fp8_problem(self, s: RegressionSize) -> str | None:
        """Why FP8 cannot run this size (None: it can)."""
        return divisible_by_16(batch=s.batch, dim=s.dim, ffn=s.ffn)

    def tokens_per_step(self, s: RegressionSize) -> int:
        return s.batch

    def flops_per_step(self, s: RegressionSize) -> float:
        """Two matrices per block, forward + backward (x3), 2 FLOPs per multiply-add."""
        return 6.0 * s.blocks * 2 * s.dim * s.ffn * s.batch

    def params(self, s: RegressionSize) -> int:
        return sum(shape.numel() for shape in canonical_shapes(lambda: self._pt(s)).values())

    def _pt(self, s: RegressionSize) -> Model:
        return Model([Block(s) for _ in range(s.blocks)])

    def build(self, s: RegressionSize, family: str, device: torch.device, seed: int) -> nn.Module:
        """The model of ``family`` ("pt" or "te") on ``device``, with the same weights for every mode."""
        with torch.device(device):
            if family == "pt":
                model = self._pt(s)
                params = list(model.named_parameters())
            else:
                model = Model([TEBlock(s) for _ in range(s.blocks)])
                params = translate_names(model, TE_NAMES, canonical_shapes(lambda: self._pt(s)))
            init_canonical(params, seed, _init_rule)
        return model

    @staticmethod
    def _teacher(s: RegressionSize) -> torch.Tensor:
        # Fixed by the size alone, on the CPU, so every mode and device sees one function.
        gen = torch.Generator().manual_seed(12345)
        return torch.randn(s.dim, s.dim, generator=gen) / s.dim**0.5

    def _data(self, s: RegressionSize, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(s.batch, s.dim, generator=torch.Generator().manual_seed(seed))
        return x, x + 0.5 * torch.tanh(x @ self._teacher(s))

    def batches(self, s: RegressionSize, count: int, seed: int, device: torch.device) -> list[Batch]:
        """``count`` batches, identical for every mode and device (drawn on the CPU)."""
        out = []
        for i in range(count):
            x, y = self._data(s, seed * 7919 + i)
            out.append(Batch(x.to(device), y.to(device)))
        return out

    def graph_inputs(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, ...]:
        """A sample input of ``model.blocks`` (only needed for cases with graphs = true)."""
        return (batch.inputs.detach().clone().requires_grad_(True),)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return F.mse_loss(model(batch.inputs).float(), batch.targets)

    def validate(self, model: nn.Module, s: RegressionSize, seed: int, device: torch.device, forward_ctx) -> dict:
        """Held-out MSE of the trained model (and R^2, for people).

        ``metric`` names the value loss parity compares with the reference's;
        ``kind`` says how: "loss" (positive, lower is better, judged within the
        loss band) or "accuracy" (0..1, with ``count`` independent samples).
        """
        x, y = self._data(s, seed + 999_983)
        x, y = x.to(device), y.to(device)
        model.eval()
        with torch.no_grad(), forward_ctx():
            pred = model(x).float()
        model.train()
        mse = ((pred - y) ** 2).mean().item()
        r2 = 1.0 - mse / ((y - y.mean(0)) ** 2).mean().item()
        return {"metric": "heldout_mse", "kind": "loss", "heldout_mse": mse, "r2": r2}
