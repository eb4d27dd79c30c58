"""The workload registry: name -> workload object.

A workload builds its model in either family (``pt`` or ``te``) from the same
canonical weights, produces deterministic batches, defines the loss, counts
FLOPs and validates the trained model. See :mod:`tebench.workloads.base`.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from tebench.workloads.base import Batch, SizeError
from tebench.workloads.distill import DistillWorkload
from tebench.workloads.gpt import GPTWorkload
from tebench.workloads.llama import LlamaWorkload
from tebench.workloads.modules import ModuleWorkload


class Workload(Protocol):
    """What the runner needs from a workload."""

    name: str
    size_type: type
    description: str

    def check(self, size: Any) -> None: ...
    def fp8_problem(self, size: Any) -> str | None: ...
    def tokens_per_step(self, size: Any) -> int: ...
    def flops_per_step(self, size: Any) -> float: ...
    def params(self, size: Any) -> int: ...
    def build(self, size: Any, family: str, device: torch.device, seed: int) -> torch.nn.Module: ...
    def batches(self, size: Any, count: int, seed: int, device: torch.device) -> list[Batch]: ...
    def graph_inputs(self, model: torch.nn.Module, batch: Batch) -> tuple[torch.Tensor, ...]: ...
    def loss(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor: ...
    def validate(self, model: torch.nn.Module, size: Any, seed: int, device: torch.device,
                 forward_ctx: Any) -> dict[str, Any]: ...


class _Registry(dict):
    """Built-in workloads by name; a name not built in is resolved as a user workload on first use.

    So a worker process finds the same user workload (an import path or an
    entry point, see :mod:`tebench.workloads.plugins`) that its matrix named.
    """

    def __missing__(self, name: str) -> Workload:
        from tebench.workloads.plugins import load

        return load(name)


WORKLOADS: dict[str, Workload] = _Registry(
    {w.name: w for w in (GPTWorkload(), LlamaWorkload(), DistillWorkload(), ModuleWorkload())})

__all__ = ["WORKLOADS", "Workload", "Batch", "SizeError"]
