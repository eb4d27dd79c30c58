"""The distillation workload: a student MLP stack learns a frozen teacher's outputs.

Teacher and student share the shape of the TE tutorial's example (embedding,
residual LayerNorm -> Linear -> GELU -> Linear blocks). The teacher is plain
PyTorch in fp32 in every mode; its targets are computed once, before timing,
so the measured step is the student's alone. The TE student's blocks are
``te.LayerNormMLP``, which fuses exactly that block.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tebench.worker.seeds import derive_seed
from tebench.worker.models.base import Batch, canonical_shapes, default_init, init_canonical, translate_names
from tebench.workloads.distill_spec import DistillSize, DistillSpec


class PTMLPBlock(nn.Module):
    """x + fc2(gelu(fc1(ln(x)))) in plain PyTorch."""

    def __init__(self, hidden: int, ffn: int):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.ln(x)), approximate="tanh"))


class TEMLPBlock(nn.Module):
    """The same block as one fused ``te.LayerNormMLP`` plus the residual."""

    def __init__(self, hidden: int, ffn: int, device: torch.device):
        super().__init__()
        import transformer_engine.pytorch as te

        self.mlp = te.LayerNormMLP(hidden, ffn, params_dtype=torch.float32, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(x)


TE_MLP_NAMES = {
    "mlp.layer_norm_weight": "ln.weight",
    "mlp.layer_norm_bias": "ln.bias",
    "mlp.fc1_weight": "fc1.weight",
    "mlp.fc1_bias": "fc1.bias",
    "mlp.fc2_weight": "fc2.weight",
    "mlp.fc2_bias": "fc2.bias",
}


class Net(nn.Module):
    """Token embedding followed by residual MLP blocks; outputs hidden states."""

    def __init__(self, s: DistillSize, blocks: nn.Module):
        super().__init__()
        self.embed = nn.Embedding(s.vocab, s.hidden)
        self.blocks = blocks

    def embed_tokens(self, idx: torch.Tensor) -> torch.Tensor:
        return self.embed(idx)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.embed(idx))


def _teacher_init(name: str, shape: torch.Size) -> tuple[str, float]:
    # A teacher drawn like the student would be nearly the identity on its
    # embedding; wider weights make its blocks matter, so there is something to learn.
    kind, _ = default_init(name, shape)
    if kind != "normal":
        return kind, 0.0
    return "normal", 1.0 if name.startswith("embed") else 1.0 / math.sqrt(shape[-1])


class DistillWorkload(DistillSpec):
    """Student-teacher distillation: the spec (:mod:`tebench.workloads.distill_spec`) plus the model."""

    def params(self, s: DistillSize) -> int:
        return sum(math.prod(shape) for shape in canonical_shapes(lambda: self._pt(s)).values())

    def _pt(self, s: DistillSize) -> Net:
        return Net(s, nn.Sequential(*[PTMLPBlock(s.hidden, s.ffn) for _ in range(s.blocks)]))

    def build(self, s: DistillSize, family: str, device: torch.device, seed: int) -> Net:
        """The student of ``family`` (pt|te) on ``device`` with the canonical weights."""
        with torch.device(device):
            if family == "pt":
                model = self._pt(s)
                init_canonical(model.named_parameters(), seed)
                return model
            model = Net(s, nn.Sequential(*[TEMLPBlock(s.hidden, s.ffn, device) for _ in range(s.blocks)]))
        init_canonical(translate_names(model, TE_MLP_NAMES, canonical_shapes(lambda: self._pt(s))), seed)
        return model

    def teacher(self, s: DistillSize, seed: int, device: torch.device) -> Net:
        """The frozen fp32 teacher of ``seed``: the one function every student of that seed learns."""
        with torch.device(device):
            teacher = self._pt(s)
        init_canonical(teacher.named_parameters(), derive_seed(seed, "teacher"), _teacher_init)
        return teacher.requires_grad_(False)

    def batches(self, s: DistillSize, count: int, seed: int, device: torch.device,
                data_seed: int | None = None) -> list[Batch]:
        """Random token batches and the teacher's fp32 outputs for them.

        ``seed`` picks the teacher, ``data_seed`` (default: ``seed``) the tokens:
        held-out batches must come from the *same* teacher on other tokens.
        """
        teacher = self.teacher(s, seed, device)
        data_seed = seed if data_seed is None else data_seed
        out = []
        with torch.no_grad():
            for i in range(count):
                gen = torch.Generator().manual_seed(derive_seed(data_seed, "batch", i))
                idx = torch.randint(0, s.vocab, (s.batch, s.seq), generator=gen).to(device)
                out.append(Batch(idx, teacher(idx)))
        return out

    def graph_inputs(self, model: Net, batch: Batch) -> tuple[torch.Tensor, ...]:
        with torch.no_grad():
            x = model.embed_tokens(batch.inputs)
        return (x.detach().requires_grad_(True),)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return F.mse_loss(model(batch.inputs).float(), batch.targets)

    def validate(self, model: Net, s: DistillSize, seed: int, device: torch.device, forward_ctx) -> dict[str, Any]:
        """MSE against the training teacher on a held-out batch of other random tokens."""
        held_out = self.batches(s, 1, seed, device, data_seed=derive_seed(seed, "held-out"))[0]
        model.eval()
        with torch.no_grad(), forward_ctx():
            mse = F.mse_loss(model(held_out.inputs).float(), held_out.targets).item()
        model.train()
        # "loss": judged on the same log scale as the training loss it estimates.
        return {"metric": "heldout_mse", "kind": "loss", "heldout_mse": mse}
