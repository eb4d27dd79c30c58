"""The model code of the built-in workloads (build, batches, loss, validation), by name.

:data:`WORKLOADS` is the worker's registry; :data:`tebench.workloads.SPECS` is the
torch-free half the parent plans with. A name that is not built in resolves as a
user workload (:mod:`tebench.workloads.plugins`), so a worker finds the same user
workload its matrix named.
"""

from __future__ import annotations

from tebench.worker.models.distill import DistillWorkload
from tebench.worker.models.gpt import GPTWorkload
from tebench.worker.models.llama import LlamaWorkload
from tebench.worker.models.modules import ModuleWorkload
from tebench.workloads import Registry, Workload

WORKLOADS: dict[str, Workload] = Registry({w.name: w for w in (GPTWorkload(), LlamaWorkload(), DistillWorkload(),
                                                               ModuleWorkload())})
"""Built-in workloads (spec and model code); user workloads resolve on first lookup."""
