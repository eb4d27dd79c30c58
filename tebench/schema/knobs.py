"""Declared fields of the matrix: the type and limits of what a matrix file sets.

(A results file's records are pydantic models, declared in :mod:`tebench.schema.records`; a
record's copy of a matrix table is checked against these declarations by
:mod:`tebench.plan.record_checks`.)

Each user-settable dataclass field says what it accepts in its metadata
(``knob(default, "doc", min=..., max=...)``); :func:`build` checks a table
against those declarations (type, finiteness, range, choices, required keys)
before anything is imported or probed. The rules live next to the fields they
guard, so a new field cannot be added without saying what it accepts.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from functools import lru_cache
from typing import Any

from tebench.errors import TebenchError

# Far beyond any real run, small enough that products of dimensions stay
# exact in Python ints and reasonable in float64 FLOP counts.
MAX_DIM = 2**20


class FieldError(TebenchError, ValueError):
    """One bad field: ``key`` names it, ``value`` is what was given."""

    def __init__(self, key: str, value: Any, message: str):
        super().__init__(message)
        self.key, self.value = key, value


_NO_VALUE = object()


def knob(default: Any, doc: str, *, min: float | None = None, max: float | None = None,
         choices: tuple[Any, ...] | None = None, optional: bool = False, **notes: Any) -> Any:
    """A dataclass field with its documentation and its accepted values.

    ``optional`` marks a field a matrix file may leave out (its default has a
    meaning, e.g. "derived"); every other field of a size must be given. A
    default of ``list`` or ``dict`` (the type) is a fresh empty one per instance.
    ``notes``: further metadata the field's users read (``omit_default`` …).
    """
    meta = {"doc": doc, "min": min, "max": max, "choices": choices, "optional": optional, **notes}
    if default in (list, dict):
        return dataclasses.field(default_factory=default, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@lru_cache(maxsize=None)
def _types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@lru_cache(maxsize=None)
def fields_by_name(cls: type) -> dict[str, dataclasses.Field]:
    """The dataclass fields of ``cls`` by name (looked up once: reading a long file checks every record's tables)."""
    return {f.name: f for f in dataclasses.fields(cls)}


def doc(cls: type, name: str) -> str:
    """The one-line documentation of a field."""
    return next(f.metadata.get("doc", "") for f in dataclasses.fields(cls) if f.name == name)


def _kind(value: Any) -> str:
    return "a boolean" if isinstance(value, bool) else type(value).__name__


def check_value(cls: type, name: str, value: Any, limits: bool = True) -> Any:
    """``value`` checked (and an int given for a float converted) for field ``name`` of ``cls``.

    ``limits=False`` checks type and finiteness only (reading old records,
    whose values were valid under the limits of their day).
    """
    fld = fields_by_name(cls)[name]
    want = _types(cls)[name]
    meta = fld.metadata
    if want is bool:
        if not isinstance(value, bool):
            raise FieldError(name, value, f"must be true or false, not {_kind(value)}")
        return value
    if want is str:
        if not isinstance(value, str):
            raise FieldError(name, value, f"must be a string, not {_kind(value)}")
    elif want is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise FieldError(name, value, f"must be an integer, not {_kind(value)}")
    elif want is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FieldError(name, value, f"must be a number, not {_kind(value)}")
        if isinstance(value, int):
            if abs(value) > 2**53:
                raise FieldError(name, value, "is too large to be a number of this kind")
            value = float(value)
        if not math.isfinite(value):
            raise FieldError(name, value, "must be a finite number")
    if not limits:
        return value
    lo, hi = meta.get("min"), meta.get("max")
    if lo is not None and value < lo:
        raise FieldError(name, value, f"must be at least {lo}" + (f" (at most {hi})" if hi is not None else ""))
    if hi is not None and value > hi:
        raise FieldError(name, value, f"must be at most {hi}")
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise FieldError(name, value, f"unknown value (known: {', '.join(map(str, choices))})")
    return value


def build(cls: type, data: dict[str, Any], *, require_all: bool = True, base: Any = None,
          limits: bool = True) -> Any:
    """An instance of ``cls`` from a table, every value checked against its field's metadata.

    ``require_all``: every non-optional field must be present (a size table that
    names only ``vocab`` must not silently take the other dimensions from
    defaults). ``base``: an instance the table overrides (settings).
    """
    known = list(fields_by_name(cls))
    for key, value in data.items():
        if key not in known:
            raise FieldError(key, value, f"unknown key (known: {', '.join(known)})")
    values = {key: check_value(cls, key, value, limits) for key, value in data.items()}
    if require_all:
        needed = [f.name for f in dataclasses.fields(cls) if not f.metadata.get("optional")]
        missing = [name for name in needed if name not in data]
        if missing:
            # key "": the table as a whole is incomplete, not one of its keys.
            optional = [name for name in known if name not in needed]
            raise FieldError("", _NO_VALUE, f"missing key(s) {', '.join(missing)}: "
                             f"every dimension must be given (needs {', '.join(needed)}"
                             + (f"; optional: {', '.join(optional)})" if optional else ")"))
    if base is not None:
        return dataclasses.replace(base, **values)
    return cls(**values)


def check_stored(cls: type, table: dict[str, Any], *, closed: bool) -> None:
    """FieldError unless a matrix table as a record stores it has each value of its declared type and not below
    its minimum.

    Only the lower limits and the choices apply: a record was valid under the upper limits of its day. ``closed``:
    a key ``cls`` does not declare is refused (the matrix refuses it too).
    """
    names = fields_by_name(cls)
    for key, value in table.items():
        if key not in names:
            if closed:
                raise FieldError(key, value, f"unknown key (known: {', '.join(names)})")
            continue
        check_value(cls, key, value, limits=False)
        meta = names[key].metadata
        lo, choices = meta.get("min"), meta.get("choices")
        if lo is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and value < lo:
            raise FieldError(key, value, f"must be at least {lo}")
        if choices is not None and value not in choices:  # a word this tebench cannot act on
            raise FieldError(key, value, f"unknown value (known: {', '.join(map(str, choices))})")


def is_missing(value: Any) -> bool:
    """True for the placeholder value of a missing-key FieldError."""
    return value is _NO_VALUE
