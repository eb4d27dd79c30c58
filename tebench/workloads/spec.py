"""What the parent process knows about a workload, without importing torch.

A workload's *spec* is its size dataclass (every field with its documented
limits, see :mod:`tebench.schema.knobs`), its shape checks, its FP8 divisibility
rule and its per-step token and FLOP counts: everything the matrix loader,
the gates, the shard planner and the results need. The model code that builds
and trains it lives beside it (``gpt.py`` next to ``gpt_spec.py``) and is only
imported by the worker.
"""

from __future__ import annotations

from typing import Any, Protocol

from tebench.schema.knobs import FieldError, build


class SizeError(FieldError):
    """A size that cannot be built; ``key`` names the offending field."""


KINDS = ("model", "module")
"""What a workload trains. ``model``: a whole model, whose named sizes form a size axis
(scaling, crossover) and which data parallelism can spread over GPUs. ``module``: one
module at several shapes, where sizes of different module types are no axis and data
parallelism does not apply. A workload without a ``kind`` attribute is a ``model``."""


class WorkloadSpec(Protocol):
    """The torch-free part of a workload."""

    name: str
    size_type: type
    description: str
    # Optional: ``kind`` (one of KINDS; "model" when absent), see workload_kind().

    def check(self, size: Any) -> None: ...
    def fp8_problem(self, size: Any) -> str | None: ...
    def tokens_per_step(self, size: Any) -> int: ...
    def flops_per_step(self, size: Any) -> float: ...


def workload_kind(spec: Any) -> str:
    """The spec's :data:`KINDS` entry; ``model`` for one that does not say (every user workload so far)."""
    return getattr(spec, "kind", "model")


def size_from_dict(cls: type, data: dict[str, Any], where: str = "") -> Any:
    """Build a size dataclass from a matrix-file table: every key known, typed, in range and present."""
    try:
        return build(cls, data, require_all=True)
    except SizeError:
        raise
    except FieldError as exc:
        raise SizeError(exc.key, exc.value, str(exc)) from None


def positive(size: Any, *names: str) -> None:
    """Raise SizeError for the first of ``names`` that is not a positive integer."""
    for name in names:
        value = getattr(size, name)
        if value <= 0:
            raise SizeError(name, value, f"'{name}' must be positive, got {value}")


def divisible_by_16(**dims: int) -> str | None:
    """FP8 GEMMs need every matrix dimension divisible by 16; return what is not."""
    bad = [f"{k}={v}" for k, v in dims.items() if v % 16]
    if bad:
        return "FP8 GEMMs need dimensions divisible by 16; not divisible: " + ", ".join(bad)
    return None
