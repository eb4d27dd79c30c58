"""The module workload: one TE module against its PyTorch equivalent.

Each step is forward + MSE against a fixed random target + backward +
optimizer step on a single module, with the input requiring grad so the data
gradient is computed as it would be inside a network.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from tebench.worker.seeds import derive_seed
from tebench.worker.models.base import Batch, canonical_shapes, init_canonical, translate_names
from tebench.worker.models.gpt import TE_BLOCK_NAMES, GPTSize, PTBlock, te_block
from tebench.workloads.modules_spec import ModuleSize, ModuleSpec


class PTLinear(nn.Module):
    def __init__(self, s: ModuleSize):
        super().__init__()
        self.fc = nn.Linear(s.hidden, s.hidden)

    def forward(self, x):
        return self.fc(x)


class PTLayerNorm(nn.Module):
    def __init__(self, s: ModuleSize):
        super().__init__()
        self.ln = nn.LayerNorm(s.hidden)

    def forward(self, x):
        return self.ln(x)


class PTLayerNormLinear(nn.Module):
    def __init__(self, s: ModuleSize):
        super().__init__()
        self.ln = nn.LayerNorm(s.hidden)
        self.fc = nn.Linear(s.hidden, s.hidden)

    def forward(self, x):
        return self.fc(self.ln(x))


class PTLayerNormMLP(nn.Module):
    def __init__(self, s: ModuleSize):
        super().__init__()
        self.ln = nn.LayerNorm(s.hidden)
        self.fc1 = nn.Linear(s.hidden, s.ffn)
        self.fc2 = nn.Linear(s.ffn, s.hidden)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.ln(x)), approximate="tanh"))


def _gpt_size(s: ModuleSize) -> GPTSize:
    return GPTSize(vocab=16, d_model=s.hidden, heads=s.heads, layers=1, ffn=s.ffn, seq=s.seq,
                   batch=s.tokens // s.seq)


def _te(name: str) -> Callable[[ModuleSize, torch.device], nn.Module]:
    def build(s: ModuleSize, device: torch.device) -> nn.Module:
        import transformer_engine.pytorch as te

        kw = {"params_dtype": torch.float32, "device": device}
        if name == "linear":
            return te.Linear(s.hidden, s.hidden, **kw)
        if name == "layernorm":
            return te.LayerNorm(s.hidden, **kw)
        if name == "layernorm_linear":
            return te.LayerNormLinear(s.hidden, s.hidden, **kw)
        if name == "layernorm_mlp":
            return te.LayerNormMLP(s.hidden, s.ffn, **kw)
        return te_block(_gpt_size(s), 1, device)

    return build


# module -> (PyTorch equivalent, TE parameter suffix -> canonical suffix)
PT_MODULES: dict[str, Callable[[ModuleSize], nn.Module]] = {
    "linear": PTLinear,
    "layernorm": PTLayerNorm,
    "layernorm_linear": PTLayerNormLinear,
    "layernorm_mlp": PTLayerNormMLP,
    "transformer_layer": lambda s: PTBlock(_gpt_size(s)),
}
TE_NAMES: dict[str, dict[str, str]] = {
    "linear": {"blocks.weight": "blocks.fc.weight", "blocks.bias": "blocks.fc.bias"},
    "layernorm": {"blocks.weight": "blocks.ln.weight", "blocks.bias": "blocks.ln.bias"},
    "layernorm_linear": {
        "blocks.layer_norm_weight": "blocks.ln.weight", "blocks.layer_norm_bias": "blocks.ln.bias",
        "blocks.weight": "blocks.fc.weight", "blocks.bias": "blocks.fc.bias",
    },
    "layernorm_mlp": {
        "blocks.layer_norm_weight": "blocks.ln.weight", "blocks.layer_norm_bias": "blocks.ln.bias",
        "blocks.fc1_weight": "blocks.fc1.weight", "blocks.fc1_bias": "blocks.fc1.bias",
        "blocks.fc2_weight": "blocks.fc2.weight", "blocks.fc2_bias": "blocks.fc2.bias",
    },
    "transformer_layer": {f"blocks.{k}": f"blocks.{v}" for k, v in TE_BLOCK_NAMES.items()},
}


class Wrapped(nn.Module):
    """Holds the module under test as ``blocks``, the part CUDA graphs capture in every workload."""

    def __init__(self, mod: nn.Module):
        super().__init__()
        self.blocks = mod

    def forward(self, x):
        return self.blocks(x)


class ModuleWorkload(ModuleSpec):
    """Single-module forward+backward: the spec (:mod:`tebench.workloads.modules_spec`) plus the modules."""

    def params(self, s: ModuleSize) -> int:
        return sum(math.prod(v) for v in canonical_shapes(lambda: self._pt(s.resolved())).values())

    def _pt(self, r: ModuleSize) -> Wrapped:
        return Wrapped(PT_MODULES[r.module](r))

    def build(self, s: ModuleSize, family: str, device: torch.device, seed: int) -> Wrapped:
        r = s.resolved()
        with torch.device(device):
            if family == "pt":
                model = self._pt(r)
                init_canonical(model.named_parameters(), seed)
                return model
            model = Wrapped(_te(r.module)(r, device))
        init_canonical(translate_names(model, TE_NAMES[r.module], canonical_shapes(lambda: self._pt(r))), seed)
        return model

    def _input_shape(self, r: ModuleSize) -> tuple[int, ...]:
        if r.module == "transformer_layer":
            return (r.tokens // r.seq, r.seq, r.hidden)
        return (r.tokens, r.hidden)

    def batches(self, s: ModuleSize, count: int, seed: int, device: torch.device) -> list[Batch]:
        """One fixed input and target, reused every step (the module sees the same data)."""
        gen = torch.Generator().manual_seed(derive_seed(seed, "batch", 0))
        shape = self._input_shape(s.resolved())
        x = torch.randn(shape, generator=gen).to(device)
        y = torch.randn(shape, generator=gen).to(device)
        return [Batch(x, y)] * count

    def graph_inputs(self, model: Wrapped, batch: Batch) -> tuple[torch.Tensor, ...]:
        return (batch.inputs.detach().clone().requires_grad_(True),)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        x = batch.inputs.detach().requires_grad_(True)
        return F.mse_loss(model(x).float(), batch.targets)

    def validate(self, model, s, seed, device, forward_ctx) -> dict[str, Any]:
        return {}
