"""The plan's pass over a stored record: what only the mode, recipe and workload registries can say.

The record declarations (:mod:`tebench.schema.records`) check every field's type and limits, but
sit below the plan: they cannot know which modes, recipes and workloads exist. A reader runs
this pass after them. A mode this tebench does not know has no colour, reference order or gate,
so its record is refused; a workload name may be a user's plugin and is any text, but a built-in
workload's dimensions are checked against its size's declaration (types and lower limits only: a
record was valid under the limits of its day). A header's
environment needs no pass here: it is a record part (:mod:`tebench.schema.environment`).
"""

from __future__ import annotations

from typing import Any

from tebench.plan.modes import MODES
from tebench.plan.recipes import RECIPES
from tebench.schema.knobs import FieldError, check_stored
from tebench.schema.version import RecordError
from tebench.workloads import SPECS


def check_case(case: dict[str, Any], path: str = "case") -> None:
    """RecordError unless a stored case's mode, recipe and dimensions are ones this tebench knows (its settings are
    the record model's: :class:`tebench.schema.records.Case`)."""
    mode = case.get("mode")
    if mode not in MODES:
        raise RecordError(f"{path}.mode", mode, f"unknown value (known: {', '.join(MODES)})")
    fp8 = case.get("fp8")
    if isinstance(fp8, dict) and fp8.get("recipe") not in RECIPES:
        raise RecordError(f"{path}.fp8.recipe", fp8.get("recipe"), f"unknown value (known: {', '.join(RECIPES)})")
    # FLOPs and tokens are computed from the dimensions: a built-in workload's are checked by its
    # size's declaration; a plugin's are its own business.
    workload = case.get("workload")
    # dict.get: the registry's own lookup would try to import a plugin by that name.
    spec = dict.get(SPECS, workload) if isinstance(workload, str) else None
    if spec is not None:
        _declared_values(spec.size_type, case.get("dims") or {}, f"{path}.dims", closed=False)


def _declared_values(cls: type, table: dict[str, Any], path: str, closed: bool) -> None:
    """:func:`~tebench.schema.knobs.check_stored` in a record's words: RecordError naming the field's path."""
    try:
        check_stored(cls, table, closed=closed)
    except FieldError as exc:
        raise RecordError(f"{path}.{exc.key}", exc.value, str(exc)) from None
