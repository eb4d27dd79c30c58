"""Memory peaks, and what the memory held between two steps is made of.

The CUDA allocator's peak says how much; what it is made of comes from the
tensors themselves, counted once per storage: the parameters (high precision,
and FP8 where the weights are FP8), their gradients, the optimizer's state and
TE's cached FP8 copies and transposes of weights. The parent derives the rest
(:mod:`tebench.analysis.memory`): buffers held between steps, and activations
and workspace, the peak minus what is held between steps.
"""

from __future__ import annotations

import resource
import sys
from typing import Any, Iterable

import torch


def _inner(obj: Any) -> Iterable[torch.Tensor]:
    """The plain tensors behind ``obj``: itself, a subclass's inner tensors, or a storage object's tensors."""
    if type(obj) in (torch.Tensor, torch.nn.Parameter):
        yield obj
        return
    flatten = getattr(obj, "__tensor_flatten__", None)
    if flatten is not None:  # a tensor subclass (TE's Float8Tensor …): its data, transpose, scales
        names, _ = flatten()
        for name in names:
            yield from _inner(getattr(obj, name))
        return
    if isinstance(obj, torch.Tensor):
        yield obj
        return
    # TE's internal quantized storages (Float8TensorStorage …) are plain objects holding tensors.
    for value in getattr(obj, "__dict__", {}).values():
        if isinstance(value, torch.Tensor):
            yield from _inner(value)


def tensor_bytes(objs: Iterable[Any], seen: set[int]) -> int:
    """Bytes of the storages behind ``objs`` not yet in ``seen`` (storage addresses; updated)."""
    total = 0
    for obj in objs:
        for t in _inner(obj):
            if t.device.type == "meta":
                continue
            storage = t.untyped_storage()
            ptr = storage.data_ptr()
            if ptr and ptr not in seen:
                seen.add(ptr)
                total += storage.nbytes()
    return total


def _quantized(t: Any) -> bool:
    return type(t) not in (torch.Tensor, torch.nn.Parameter) and hasattr(t, "__tensor_flatten__")


def composition(model: torch.nn.Module, optimizer: Any) -> dict[str, int]:
    """Bytes of parameters, FP8 weights, gradients, optimizer state and FP8 weight caches, each storage once."""
    seen: set[int] = set()
    params = list(model.parameters())
    out = {
        "params_bytes": tensor_bytes([p for p in params if not _quantized(p)], seen),
        "fp8_weight_bytes": tensor_bytes([p for p in params if _quantized(p)], seen),
    }
    grads = [g for p in params for g in (p.grad, getattr(p, "main_grad", None)) if g is not None]
    out["grads_bytes"] = tensor_bytes(grads, seen)
    state = [v for s in getattr(optimizer, "state", {}).values() if isinstance(s, dict) for v in s.values()]
    out["optimizer_bytes"] = tensor_bytes([v for v in state if isinstance(v, torch.Tensor)], seen)
    caches = [w for m in model.modules() for w in (getattr(m, "_fp8_workspaces", None) or {}).values()]
    out["fp8_weight_bytes"] += tensor_bytes(caches, seen)
    return out


def peaks(device: torch.device, model: torch.nn.Module | None = None, optimizer: Any = None) -> dict[str, Any]:
    """The ``memory`` part: allocator peaks on CUDA (with what is held between steps), peak RSS on a CPU."""
    if device.type == "cuda":
        out: dict[str, Any] = {
            "kind": "cuda",
            "peak_allocated_bytes": torch.cuda.max_memory_allocated(device),
            "peak_reserved_bytes": torch.cuda.max_memory_reserved(device),
            # After a step's optimizer update: what stays allocated from one step to the next.
            "between_steps_bytes": torch.cuda.memory_allocated(device),
        }
        if model is not None:
            out.update(composition(model, optimizer))
        return out
    # ru_maxrss is in kilobytes on Linux and bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return {"kind": "cpu", "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale}
