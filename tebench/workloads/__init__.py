"""The workload registries: name -> spec (torch-free) and name -> workload (model code).

:data:`SPECS` holds what the parent process needs (size dataclasses, shape
checks, FLOP and token counts) and imports no torch, so the CLI, the matrix
loader, ``list``, ``report``, ``compare`` and ``history`` stay fast and work
where torch is not installed. :data:`WORKLOADS` adds the model code (build,
batches, loss, validation; see :mod:`tebench.workloads.base`) and is loaded on
first use, in the worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from tebench.workloads.distill_spec import DistillSpec
from tebench.workloads.gpt_spec import GPTSpec
from tebench.workloads.modules_spec import ModuleSpec
from tebench.workloads.spec import SizeError, WorkloadSpec

if TYPE_CHECKING:
    import torch

    from tebench.workloads.base import Batch


class Workload(WorkloadSpec, Protocol):
    """What the worker needs from a workload: its spec plus the model code."""

    def params(self, size: Any) -> int: ...
    def build(self, size: Any, family: str, device: "torch.device", seed: int) -> "torch.nn.Module": ...
    def batches(self, size: Any, count: int, seed: int, device: "torch.device") -> "list[Batch]": ...
    def graph_inputs(self, model: "torch.nn.Module", batch: "Batch") -> "tuple[torch.Tensor, ...]": ...
    def loss(self, model: "torch.nn.Module", batch: "Batch") -> "torch.Tensor": ...
    def validate(self, model: "torch.nn.Module", size: Any, seed: int, device: "torch.device",
                 forward_ctx: Any) -> dict[str, Any]: ...


SPECS: dict[str, WorkloadSpec] = {s.name: s for s in (GPTSpec(), DistillSpec(), ModuleSpec())}


def __getattr__(name: str) -> Any:
    # WORKLOADS and Batch import torch: loaded on first use only (PEP 562), so
    # importing this package from the parent process stays torch-free.
    if name == "WORKLOADS":
        from tebench.workloads.distill import DistillWorkload
        from tebench.workloads.gpt import GPTWorkload
        from tebench.workloads.modules import ModuleWorkload

        workloads = {w.name: w for w in (GPTWorkload(), DistillWorkload(), ModuleWorkload())}
        globals()["WORKLOADS"] = workloads
        return workloads
    if name == "Batch":
        from tebench.workloads.base import Batch

        globals()["Batch"] = Batch
        return Batch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["SPECS", "WORKLOADS", "Workload", "WorkloadSpec", "Batch", "SizeError"]
