"""Deliberately wrong models for the verdicts' self-tests (``TEBENCH_TEST_FAULT``).

Each mutation is a mistake a real user makes and that nothing reports: the
model still builds, trains and its loss still falls. The loss-parity verdicts
must judge every one of them ``fail``; the README's mutation table records that
they do. Applied in the case process, after the canonical weights are drawn
and before the optimizer sees the parameters.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from tebench.plan.faults import MUTATIONS


LEAK_EVERY = 16
"""leak-small: one position in this many also carries the next position's input (the token it must predict)."""
DROPOUT = 0.2
"""dropout-on: the dropout probability on the block stack's input."""
NORM_EPS = 1.0
"""norm-eps: every normalization's epsilon."""


class SwapBatchSeq(nn.Module):
    """Runs ``inner`` on ``[seq, batch, ...]`` when handed ``[batch, seq, ...]``.

    The same mistake as feeding batch-first activations to a layer that
    expects sequence-first: attention then mixes the samples of a batch.
    """

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x.transpose(0, 1)).transpose(0, 1)


class LeakNext(nn.Module):
    """Runs ``inner`` on ``x`` plus ``x`` shifted one position back: position t also carries t+1.

    The mistake of a target shifted the wrong way: each position sees the token it must predict. With
    ``every`` > 1 only every ``every``-th position does (the last of each group): a small leak.
    """

    def __init__(self, inner: nn.Module, every: int = 1):
        super().__init__()
        self.inner = inner
        self.every = every

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nxt = x.roll(-1, dims=1)
        if self.every > 1:
            keep = (torch.arange(x.shape[1], device=x.device) % self.every == self.every - 1).to(x.dtype)
            nxt = nxt * keep.view(1, -1, *([1] * (x.dim() - 2)))
        return self.inner(x + nxt)


class DropoutBefore(nn.Module):
    """Runs ``inner`` on ``x`` after dropout ``p`` (in training only): a regularization left on."""

    def __init__(self, inner: nn.Module, p: float):
        super().__init__()
        self.inner = inner
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(nn.functional.dropout(x, self.p, self.training))


class WithForwardKwargs(nn.Module):
    """Calls ``inner`` with fixed extra keyword arguments (e.g. a mask type)."""

    def __init__(self, inner: nn.Module, **kwargs: Any):
        super().__init__()
        self.inner = inner
        self.kwargs = kwargs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x, **self.kwargs)


def _blocks(model: nn.Module, kind: str) -> nn.Sequential:
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, nn.Sequential) or not len(blocks):
        raise RuntimeError(f"mutation {kind!r} needs a model with a 'blocks' stack; this workload has none")
    return blocks


def _pin_fp8_scales(model: nn.Module) -> Callable[..., None]:
    def hook(*_: Any) -> None:
        with torch.no_grad():
            for module in model.modules():
                meta = getattr(module, "fp8_meta", None)
                if not isinstance(meta, dict):
                    continue
                for key in ("scaling_fwd", "scaling_bwd"):
                    state = meta.get(key)
                    if state is not None and hasattr(state, "scale"):
                        state.scale.fill_(1.0)
    return hook


def _bypass_fp8(model: nn.Module) -> None:
    """Run every TE module's forward with FP8 disabled: the mistake of a layer called outside the autocast.

    ``model`` may be a part of the whole (``fp8-partial`` passes the blocks after the first).
    """
    from tebench.worker import te_compat
    from tebench.worker.census import is_te_module

    def outside_fp8(module: nn.Module) -> None:
        inner = module.forward

        def forward(*args: Any, **kwargs: Any) -> Any:
            with te_compat.fp8_disabled():
                return inner(*args, **kwargs)
        module.forward = forward

    for module in model.modules():
        if is_te_module(module):
            outside_fp8(module)


def _bypass_float8_linear(model: nn.Module) -> None:
    """Every torchao Float8Linear runs nn.Linear's own forward: converted, but computing in high precision."""
    from torchao.float8.float8_linear import Float8Linear

    found = [m for m in model.modules() if isinstance(m, Float8Linear)]
    if not found:
        raise RuntimeError("mutation 'fp8-bypass': the model has no torchao Float8Linear layer")
    for module in found:
        module.forward = nn.Linear.forward.__get__(module)


def apply(kind: str, model: nn.Module, workload: Any, family: str, case: Any) -> str:
    """Mutate ``model`` in place (before the optimizer is built); returns what was done.

    ``lr-x10`` and ``fp8-scale-one`` act elsewhere (the optimizer, after each
    step); see :func:`lr_scale` and :func:`after_optimizer`.
    """
    if kind not in MUTATIONS:
        raise ValueError(f"unknown mutation {kind!r}")
    if kind == "swap-layout":
        blocks = _blocks(model, kind)
        for i, block in enumerate(blocks):
            blocks[i] = SwapBatchSeq(block)
    elif kind == "freeze-layer":
        _blocks(model, kind)[0].requires_grad_(False)
    elif kind == "leak-next":
        model.blocks = LeakNext(_blocks(model, kind))  # a stack of blocks on [batch, seq, hidden]
    elif kind == "leak-small":
        model.blocks = LeakNext(_blocks(model, kind), LEAK_EVERY)
    elif kind == "dropout-on":
        model.blocks = DropoutBefore(_blocks(model, kind), DROPOUT)
    elif kind == "norm-eps":
        # PyTorch's LayerNorm/RMSNorm and TE's normalizing modules all read ``eps`` at every forward.
        norms = [m for m in model.modules() if isinstance(getattr(m, "eps", None), float)]
        if not norms:
            raise RuntimeError("mutation 'norm-eps': the model has no normalization with an eps")
        for m in norms:
            m.eps = NORM_EPS  # type: ignore[assignment]  # nn.Module types an undeclared attribute as Tensor | Module
    elif kind == "init-default":
        # Seeded, so the mutated run is reproducible; not the canonical draw every mode shares.
        torch.manual_seed(getattr(getattr(case, "settings", None), "seed", 0) + 1)
        for module in model.modules():
            reset = getattr(module, "reset_parameters", None)
            if callable(reset) and module is not model:
                reset()
    elif kind == "no-causal":
        mutate = getattr(workload, "mutate", None)
        if mutate is None or not mutate(model, kind, family):
            raise RuntimeError(f"workload {workload.name!r} cannot express mutation {kind!r}")
    elif kind == "fp8-bypass":
        if getattr(case, "fp8", None) is None:
            raise RuntimeError("mutation 'fp8-bypass' needs an FP8 case (TE-FP8 or AO-FP8)")
        if family == "te":
            _bypass_fp8(model)
        else:
            _bypass_float8_linear(model)
    elif kind == "fp8-partial":
        if family != "te" or getattr(case, "fp8", None) is None:
            raise RuntimeError("mutation 'fp8-partial' needs a TE-FP8 case")
        for block in list(_blocks(model, kind))[1:]:
            _bypass_fp8(block)
    elif kind == "fp8-scale-one":
        fp8 = getattr(case, "fp8", None)
        if family != "te" or fp8 is None or fp8.recipe != "delayed":
            raise RuntimeError("mutation 'fp8-scale-one' needs a TE-FP8 delayed-scaling case")
    return MUTATIONS[kind]


def lr_scale(kind: str | None) -> float:
    """Factor on the case's learning rate."""
    return {"lr-x10": 10.0, "lr-quarter": 0.25}.get(kind or "", 1.0)


def after_optimizer(kind: str | None, optimizer: torch.optim.Optimizer, model: nn.Module) -> None:
    """Hooks a mutation needs after every optimizer step."""
    if kind == "fp8-scale-one":
        # TE recomputes delayed scaling factors from the amax history as it goes;
        # pinning them back to 1 after every step keeps the next quantization unscaled.
        optimizer.register_step_post_hook(_pin_fp8_scales(model))
