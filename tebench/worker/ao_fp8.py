"""torchao's float8 training for the AO-FP8 mode: which linear layers convert, and the conversion itself.

The model is PT-AMP's: the same module family, built from the same canonical
weights. ``convert_to_float8_training`` swaps its ``nn.Linear`` layers for
``Float8Linear`` in place and keeps their weight tensors, so the case starts
from exactly the weights every other mode starts from. Which layers convert
follows torchao's own recipes (and torchtitan's default): not the LM head, and
no layer with a dimension that is not a multiple of 16 (the FP8 GEMMs' rule).
torchao's size heuristics (``_auto_filter_for_recipe``) are not applied: they
would leave small models with nothing in FP8, and what the sizes cost is what
the benchmark is for. ``setup`` records what converted and what did not, and why.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

LM_HEAD_NAMES = ("head", "lm_head", "output")
"""Top-level linear layers taken for the LM head (torchao's recipes and torchtitan keep it in high precision)."""
NAMES_KEPT = 20
"""Names of layers left unconverted that ``setup`` lists, at most."""


def keep_reason(module: nn.Linear, fqn: str) -> str | None:
    """Why the linear layer ``fqn`` stays in high precision, or None when it converts."""
    if fqn in LM_HEAD_NAMES:
        return "the LM head"
    out_features, in_features = module.weight.shape
    if out_features % 16 or in_features % 16:
        return f"{in_features}x{out_features} is not a multiple of 16"
    return None


def plan(model: nn.Module) -> tuple[list[str], dict[str, str]]:
    """(the linear layers that convert, {layer: why it stays}) for ``model``, by qualified name."""
    convert, keep = [], {}
    for fqn, module in model.named_modules():
        if isinstance(module, nn.Linear):
            why = keep_reason(module, fqn)
            if why:
                keep[fqn] = why
            else:
                convert.append(fqn)
    return convert, keep


def config(recipe: str, fsdp_all_gather: bool = False) -> Any:
    """torchao's ``Float8LinearConfig`` for a recipe name (``tensorwise``, ``rowwise``, ``rowwise_with_gw_hp``).

    ``fsdp_all_gather`` gathers FSDP2's sharded weights in FP8; torchao has it for tensorwise scaling only.
    """
    from torchao.float8.config import Float8LinearConfig

    cfg = Float8LinearConfig.from_recipe_name(recipe)
    if fsdp_all_gather:
        import dataclasses

        cfg = dataclasses.replace(cfg, enable_fsdp_float8_all_gather=True)
    return cfg


def convert(model: nn.Module, recipe: str, fsdp_all_gather: bool = False) -> dict[str, Any]:
    """Convert ``model`` in place; returns the ``setup`` entries that say what was done."""
    from torchao.float8 import convert_to_float8_training

    converted, keep = plan(model)
    wanted = set(converted)
    before = {id(p) for p in model.parameters()}
    convert_to_float8_training(model, config=config(recipe, fsdp_all_gather),
                               module_filter_fn=lambda mod, fqn: fqn in wanted)
    if not fsdp_all_gather and {id(p) for p in model.parameters()} != before:
        # The conversion must keep the parameter tensors: the case starts from the canonical weights.
        # (With FP8 all-gather torchao wraps each weight's own tensor in a new Parameter.)
        raise RuntimeError("torchao's conversion replaced parameter tensors; the canonical weights are lost")
    from torchao.float8.float8_linear import Float8Linear

    done = sum(isinstance(m, Float8Linear) for m in model.modules())
    if done != len(converted):
        raise RuntimeError(f"torchao converted {done} linear layers, {len(converted)} were asked for")
    kept = [f"{name} ({why})" for name, why in sorted(keep.items())]
    call = f"Float8LinearConfig.from_recipe_name({recipe!r})" + (
        " with enable_fsdp_float8_all_gather" if fsdp_all_gather else "")
    return {
        "fp8_library": "torchao",
        "fp8_recipe": call,
        "fp8_conversion": (f"torchao convert_to_float8_training: {done} of {done + len(keep)} nn.Linear layers "
                           f"to Float8Linear" + (f"; kept in high precision: {', '.join(kept[:NAMES_KEPT])}"
                                                 + (" …" if len(kept) > NAMES_KEPT else "") if kept else "")),
        "fp8_converted": done,
        "fp8_fsdp_all_gather": fsdp_all_gather or None,
    }


def precompute_fsdp_scales(model: nn.Module) -> None:
    """After an optimizer step: one amax reduction for all FP8-gathered weights (torchao's advice with FSDP2)."""
    from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp

    with torch.no_grad():
        precompute_float8_dynamic_scale_for_fsdp(model)
