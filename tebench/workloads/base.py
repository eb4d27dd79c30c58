"""The plugin protocol's documented import name: what a user's workload builds on.

``from tebench.workloads.base import Batch, SizeError, init_canonical, ...`` is what
user workloads (and the guide's "Your own workload") write. The code lives with the
rest of the model code in the worker package, :mod:`tebench.worker.models.base`, and the
torch-free size checks in :mod:`tebench.workloads.spec` (where the parent process finds them);
importing this module imports torch, as a workload's model code does.
"""

from tebench.worker.models.base import Batch, canonical_shapes, default_init, init_canonical, translate_names
from tebench.workloads.spec import SizeError, divisible_by_16, positive, size_from_dict

__all__ = ["Batch", "SizeError", "canonical_shapes", "default_init", "divisible_by_16", "init_canonical",
           "positive", "size_from_dict", "translate_names"]
