"""FP8 off for a model's structural checks: the same modules, mask and layout, in high precision.

Per-tensor FP8 scales computed from the current batch (TE's current scaling, torchao's tensorwise)
depend on every token in it. Replacing the later half of a batch moves the scale, and with it the
rounding of the earlier half's predictions: by up to 0.003 nats of KL on the H200 at the Llama d4096
size, against 0.011 for a missing causal mask at the GPT tutorial size. The structural checks ask about
the mask and the layout, which FP8 does not change, so they run with FP8 off; what FP8 does to the
model's predictions is what the loss equivalence judges.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from torch import nn

from tebench.worker.census import is_te_module


def _is_float8_linear(module: nn.Module) -> bool:
    return type(module).__name__ == "Float8Linear" and type(module).__module__.startswith("torchao")


def _quantized_params(model: nn.Module) -> bool:
    """FP8 parameters (TE's quantized weights): left as they are, FP8 stays on for them."""
    return any("Quantized" in type(p).__name__ or "Float8Tensor" in type(p).__name__ for p in model.parameters())


@contextlib.contextmanager
def fp8_off(model: nn.Module) -> Iterator[str]:
    """Run ``model``'s forward passes inside this block without FP8.

    Yields ``"off"`` (FP8 was switched off), ``"none"`` (the model has no FP8 layer) or ``"on"``
    (FP8 weights kept it on).

    TE modules run under TE's autocast with FP8 disabled (nested inside the case's own FP8 autocast,
    it wins); torchao's ``Float8Linear`` layers run ``nn.Linear``'s forward on the same weights.
    A model with FP8 weights (TE's quantized parameters) keeps FP8 on: there is no high-precision
    copy to compute with.
    """
    te_modules = any(is_te_module(m) for m in model.modules())
    float8 = [m for m in model.modules() if _is_float8_linear(m)]
    if te_modules and _quantized_params(model):
        yield "on"
        return
    with contextlib.ExitStack() as stack:
        if te_modules:
            from tebench.worker import te_compat

            stack.enter_context(te_compat.fp8_disabled())
        for module in float8:
            had = module.__dict__.get("forward")
            module.forward = nn.Linear.forward.__get__(module)
            stack.callback(_restore, module, had)
        yield "off" if te_modules or float8 else "none"


def _restore(module: nn.Module, forward: Any) -> None:
    if forward is None:
        del module.forward
    else:
        module.forward = forward
