"""The workload registries: name -> spec (torch-free) and name -> workload (model code).

:data:`SPECS` holds what the parent process needs (size dataclasses, shape
checks, FLOP and token counts) and imports no torch, so the CLI, the matrix
loader, ``list``, ``report``, ``compare`` and ``history`` stay fast and work
where torch is not installed. :data:`WORKLOADS` adds the model code (build,
batches, loss, validation; see :mod:`tebench.worker.models.base`) and is loaded on
first use, in the worker. A name that is not built in is a user workload (an
import path or an entry point, :mod:`tebench.workloads.plugins`): both
registries resolve it on first use, so a worker finds the same user workload
its matrix named. A user workload is one object, spec and model code together,
so resolving it imports whatever its module imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from tebench.workloads.distill_spec import DistillSpec
from tebench.workloads.gpt_spec import GPTSpec
from tebench.workloads.llama_spec import LlamaSpec
from tebench.workloads.modules_spec import ModuleSpec
from tebench.workloads.spec import SizeError, WorkloadSpec, workload_kind

if TYPE_CHECKING:
    import torch

    from tebench.schema.records import Case

    from tebench.worker.models.base import Batch


class Workload(WorkloadSpec, Protocol):
    """What the worker needs from a workload: its spec plus the model code."""

    def params(self, size: Any) -> int: ...
    def build(self, size: Any, family: str, device: "torch.device", seed: int) -> "torch.nn.Module": ...
    def batches(self, size: Any, count: int, seed: int, device: "torch.device") -> "list[Batch]": ...
    def graph_inputs(self, model: "torch.nn.Module", batch: "Batch") -> "tuple[torch.Tensor, ...]": ...
    def loss(self, model: "torch.nn.Module", batch: "Batch") -> "torch.Tensor": ...
    def validate(self, model: "torch.nn.Module", size: Any, seed: int, device: "torch.device",
                 forward_ctx: Any) -> dict[str, Any]: ...


class Registry(dict):
    """Built-ins by name; any other name is resolved as a user workload on first use."""

    def __missing__(self, name: str) -> Any:
        from tebench.workloads.plugins import load

        return load(name)


SPECS: dict[str, WorkloadSpec] = Registry({s.name: s for s in (GPTSpec(), LlamaSpec(), DistillSpec(), ModuleSpec())})
"""Built-in workload specs (torch-free); user workloads resolve on first lookup."""
BUILT_IN = tuple(SPECS)
"""The names of the built-in workloads, in registry order."""


def kind(name: str) -> str:
    """The kind (``model`` or ``module``, see :data:`tebench.workloads.spec.KINDS`) of the workload ``name``.

    Never imports a user workload: a name that is neither built in nor already
    resolved in this process (a report of someone else's results) is a ``model``.
    """
    spec = dict.get(SPECS, name)
    return workload_kind(spec) if spec is not None else "model"


def size_of(case: "Case") -> Any:
    """The workload's size dataclass of ``case`` (its ``dims``)."""
    return SPECS[case.workload].size_type(**case.dims)


__all__ = ["SPECS", "BUILT_IN", "Workload", "WorkloadSpec", "SizeError", "kind", "size_of"]
