"""What every workload provides, and the shared weight initialisation.

Loss parity only means something when every mode of a workload starts from the
same weights and sees the same batches. Weights are therefore defined once, by
*canonical name* (the plain-PyTorch model's parameter names): each parameter is
drawn from its own generator seeded by (seed, canonical name), on the device the
case runs on. A Transformer Engine model translates its parameter names to the
canonical ones and draws exactly the same values; a name that does not
translate, or a shape that differs, is an error rather than a silent mismatch.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable, Iterable

import torch
from torch import nn

from tebench.worker.seeds import derive_seed


@dataclass(frozen=True)
class Batch:
    """One training batch: model inputs and the targets the loss compares against."""

    inputs: torch.Tensor
    targets: torch.Tensor


def _param_seed(seed: int, name: str) -> int:
    return derive_seed(seed, "param", zlib.crc32(name.encode()))


def default_init(name: str, shape: torch.Size, residual_layers: int = 0) -> tuple[str, float]:
    """How a canonical parameter is initialised: (``zeros``|``ones``|``normal``, std).

    GPT-2 style: normal(0, 0.02), LayerNorm weights one, biases zero, and the
    projections that feed the residual stream scaled by 1/sqrt(2 * layers).
    """
    leaf = name.rsplit(".", 1)[-1]
    owner = name.rsplit(".", 2)[-2] if name.count(".") >= 1 else ""
    if leaf == "bias":
        return "zeros", 0.0
    if owner.startswith("ln") or owner in ("norm", "layernorm"):
        return "ones", 0.0
    std = 0.02
    if residual_layers and owner in ("proj", "fc2"):
        std /= (2 * residual_layers) ** 0.5
    return "normal", std


def init_canonical(
    params: Iterable[tuple[str, torch.Tensor]],
    seed: int,
    rule: Callable[[str, torch.Size], tuple[str, float]] = default_init,
) -> None:
    """Initialise ``(canonical_name, parameter)`` pairs deterministically on their device.

    Values are drawn into an fp32 buffer and copied in, so parameters stored in
    another dtype (or as TE's FP8 tensors) receive the same values, rounded.
    """
    with torch.no_grad():
        for name, param in params:
            kind, std = rule(name, param.shape)
            buf = torch.empty(param.shape, dtype=torch.float32, device=param.device)
            if kind == "zeros":
                buf.zero_()
            elif kind == "ones":
                buf.fill_(1.0)
            else:
                gen = torch.Generator(device=param.device).manual_seed(_param_seed(seed, name))
                buf.normal_(0.0, std, generator=gen)
            param.copy_(buf)
            if hasattr(param, "quantize_"):
                # A TE quantized (FP8) weight keeps only the rounded value. Keep
                # the exact one (on the CPU, like TE's own
                # preserve_high_precision_init_val) to seed the optimizer's
                # fp32 master weight; see tebench.worker.train.seed_fp8_masters.
                param.tebench_init_fp32 = buf.cpu()  # type: ignore[attr-defined]  # an attribute of our own


def translate_names(
    model: nn.Module, suffix_map: dict[str, str], expected: dict[str, torch.Size]
) -> list[tuple[str, torch.Tensor]]:
    """Pair a TE model's parameters with canonical names, checking names and shapes.

    ``suffix_map`` maps a TE parameter-name suffix (``layernorm_mlp.fc1_weight``)
    to the canonical one (``fc1.weight``); the longest matching suffix wins.
    ``expected`` is the canonical model's name → shape.
    """
    pairs: list[tuple[str, torch.Tensor]] = []
    ordered = sorted(suffix_map.items(), key=lambda kv: -len(kv[0]))
    unmapped, wrong_shape = [], []
    for name, param in model.named_parameters():
        canonical = name
        for te_suffix, canon_suffix in ordered:
            if name == te_suffix:
                canonical = canon_suffix
                break
            if name.endswith("." + te_suffix):
                canonical = name[: -len(te_suffix)] + canon_suffix
                break
        if canonical not in expected:
            unmapped.append(name)
            continue
        if tuple(expected[canonical]) != tuple(param.shape):
            wrong_shape.append(f"{name} {tuple(param.shape)} vs {canonical} {tuple(expected[canonical])}")
        pairs.append((canonical, param))
    missing = set(expected) - {c for c, _ in pairs}
    if unmapped or wrong_shape or missing:
        raise RuntimeError(
            "TE model does not match the canonical PyTorch layout: "
            f"unmapped TE parameters {unmapped}, shape mismatches {wrong_shape}, "
            f"canonical parameters with no TE counterpart {sorted(missing)}"
        )
    return pairs


def canonical_shapes(build_pt: Callable[[], nn.Module]) -> dict[str, torch.Size]:
    """Names and shapes of the canonical model, built on the meta device (no memory)."""
    with torch.device("meta"):
        model = build_pt()
    return {name: p.shape for name, p in model.named_parameters()}
