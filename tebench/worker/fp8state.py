"""FP8 scaling state of TE layers: sampled during training, summarised per layer.

Only stateful recipes (delayed scaling) keep a scale and an amax history in
each module's ``fp8_meta``; for the others there is nothing to record. Samples
are GPU clones taken without synchronising and read once at the end, so
sampling does not disturb the timing it runs beside.
"""

from __future__ import annotations

import math
from typing import Any

import torch

# A scale below this means amax exceeded 256 x the FP8 format's maximum: the
# layer's values are overflowing the range the recipe can represent.
COLLAPSED_SCALE = 1.0 / 256


def _role(direction: str, i: int) -> str:
    if direction == "fwd":
        return f"gemm{i // 3 + 1}.{('input', 'weight', 'output')[i % 3]}"
    return f"gemm{i // 2 + 1}.{('grad_output', 'grad_input')[i % 2]}"


def stateful_modules(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """TE modules whose FP8 metadata holds delayed-scaling state."""
    found = []
    for name, module in model.named_modules():
        meta = getattr(module, "fp8_meta", None)
        if isinstance(meta, dict) and hasattr(meta.get("scaling_fwd"), "scale"):
            found.append((name, module))
    return found


class ScalingRecorder:
    """Collects scale / amax snapshots of every stateful TE module."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.samples: list[tuple[int, dict[str, dict[str, torch.Tensor]]]] = []

    def sample(self, step: int) -> None:
        """Clone the current state (asynchronously) and remember it for ``step``."""
        snap = {}
        for name, module in stateful_modules(self.model):
            # TE keeps fp8_meta as a plain dict attribute (stateful_modules checked); torch types any
            # module attribute as Tensor | Module.
            meta: dict[str, Any] = module.fp8_meta  # type: ignore[assignment]
            entry = {}
            for direction in ("fwd", "bwd"):
                state = meta.get(f"scaling_{direction}")
                if state is None:
                    continue
                entry[f"scale_{direction}"] = state.scale.detach().clone()
                entry[f"amax_{direction}"] = state.amax_history.detach().amax(dim=0)
            snap[name] = entry
        if snap:
            self.samples.append((step, snap))

    def summary(self) -> dict[str, Any] | None:
        """Per layer and quantizer: scale and amax over the samples, and any flags."""
        if not self.samples:
            return None
        steps = [s for s, _ in self.samples]
        layers: dict[str, Any] = {}
        flags: list[str] = []
        for name in self.samples[-1][1]:
            quantizers = {}
            for direction in ("fwd", "bwd"):
                key = f"scale_{direction}"
                series = [snap[name][key].float().cpu().tolist() for _, snap in self.samples if key in snap.get(name, {})]
                amaxes = [snap[name][f"amax_{direction}"].float().cpu().tolist()
                          for _, snap in self.samples if key in snap.get(name, {})]
                if not series:
                    continue
                for i in range(len(series[-1])):
                    role = f"{direction}.{_role(direction, i)}"
                    scales = [row[i] for row in series]
                    amax = [row[i] for row in amaxes]
                    quantizers[role] = {"scale": scales, "amax": amax}
                    used = any(a > 0 for a in amax)
                    if not all(math.isfinite(v) for v in scales + amax):
                        flags.append(f"{name} {role}: non-finite scale or amax (overflow)")
                    elif used and scales[-1] < COLLAPSED_SCALE:
                        flags.append(f"{name} {role}: scale collapsed to {scales[-1]:.3g} "
                                     f"(amax {amax[-1]:.3g} beyond 256x the FP8 maximum)")
            layers[name] = quantizers
        return {"steps": steps, "layers": layers, "flags": flags}
