"""Which modules ran, and in which precision, during the profiled extra steps (forward hooks).

Evidence for the FP8 proof that does not depend on kernel names: a TE module
records in its forward whether an FP8 recipe was in force (``module.fp8``), so
a TE layer called outside tebench's FP8 autocast shows up by name. The linear
layers' GEMM FLOPs are counted by the precision they ran in, from the shapes
seen (forward x 3: the backward's two GEMMs have the forward's size).

Hooks fire in eager forwards only: under CUDA graphs (replays skip Python)
and torch.compile (hooks added after compiling would recompile) the census
reports itself unobserved instead of zero.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any, Iterator

import torch

OUTSIDE_KEPT = 20
"""Names of TE modules that ran without FP8, at most."""


def is_te_module(module: torch.nn.Module) -> bool:
    """A Transformer Engine module with FP8 metadata (Linear, LayerNormLinear, LayerNormMLP, attention …)."""
    return type(module).__module__.startswith("transformer_engine") and hasattr(module, "fp8_meta")


def _weights(module: torch.nn.Module) -> list[torch.Tensor]:
    """The GEMM weights a linear-like module holds directly (weight, fc1_weight, weight0 …)."""
    return [p for name, p in module.named_parameters(recurse=False) if "weight" in name and p.dim() == 2]


def _precision(module: torch.nn.Module, weight: torch.Tensor) -> str:
    if getattr(module, "fp8", False) and is_te_module(module):
        return "fp8"
    device = weight.device.type
    if torch.is_autocast_enabled(device):
        dtype = torch.get_autocast_dtype(device)
    else:
        dtype = getattr(module, "activation_dtype", None) or weight.dtype
    return {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, "fp32")


def is_te_other(module: torch.nn.Module) -> bool:
    """A Transformer Engine module without FP8 metadata (LayerNorm, RMSNorm …): TE ran it, no recipe applies."""
    return type(module).__module__.startswith("transformer_engine") and not hasattr(module, "fp8_meta")


class Census:
    """Forward hooks on every module of ``model``; :meth:`summary` after the steps."""

    def __init__(self, model: torch.nn.Module, steps: int):
        self.model = model
        self.steps = steps
        self.fp8: set[str] = set()
        self.high: set[str] = set()
        self.other: set[str] = set()
        self.flops: dict[str, float] = defaultdict(float)
        self._handles: list[Any] = []

    def _hook(self, name: str, module: torch.nn.Module) -> Any:
        te = is_te_module(module)
        linear = isinstance(module, torch.nn.Linear) or (te and bool(_weights(module)))

        def after_forward(mod: torch.nn.Module, args: tuple, _out: Any) -> None:
            if te:
                (self.fp8 if getattr(mod, "fp8", False) else self.high).add(name)
            if linear and args and isinstance(args[0], torch.Tensor):
                x = args[0]
                weights = _weights(mod)
                if not weights:
                    return
                rows = x.numel() // max(1, x.shape[-1])
                precision = _precision(mod, weights[0])
                # forward, input gradient and weight gradient: three GEMMs of the forward's size
                self.flops[precision] += 3 * 2 * rows * sum(w.numel() for w in weights)
        return after_forward

    def _other_hook(self, name: str) -> Any:
        def after_forward(_mod: torch.nn.Module, _args: tuple, _out: Any) -> None:
            self.other.add(name)
        return after_forward

    @contextlib.contextmanager
    def watching(self) -> Iterator["Census"]:
        """Hooks in place for the ``with`` body, removed after."""
        for name, module in self.model.named_modules():
            if is_te_module(module) or isinstance(module, torch.nn.Linear):
                self._handles.append(module.register_forward_hook(self._hook(name or "(model)", module)))
            elif is_te_other(module):
                # A model of TE norms only (module/layernorm) ran TE though no module above did.
                self._handles.append(module.register_forward_hook(self._other_hook(name or "(model)")))
        try:
            yield self
        finally:
            for handle in self._handles:
                handle.remove()
            self._handles.clear()

    def summary(self, observed: bool = True, note: str | None = None) -> dict[str, Any]:
        """The ``modules`` part of a record: what ran, per profiled step."""
        if not observed:
            return {"observed": False, "note": note}
        outside = sorted(self.high - self.fp8)
        return {
            "observed": True,
            "te_fp8": len(self.fp8),
            "te_high_precision": len(self.high - self.fp8),
            "te_other": len(self.other),
            "te_outside_fp8": outside[:OUTSIDE_KEPT] or None,
            "linear_flops": {k: v / self.steps for k, v in sorted(self.flops.items())} or None,
            "note": note,
        }
