"""Validation of stored records derived from their declarations: the field's type hint and its knob.

A part of a record is a dataclass; each field's annotation says what it holds
(``float | None``, ``list[float]``, ``dict[str, int]``, another part …) and its
``knob`` metadata the limits where it has any (``min``, ``max``, ``choices``,
``nonempty``, ``finite``, ``required``, ``items_min``). :func:`check` walks a JSON object against
those declarations at every depth, so a reader never computes with a value of the
wrong kind: a damaged value anywhere raises :class:`RecordError` naming the field's
path and the value. Keys a part does not declare ride along unchecked, except for
:func:`check_text`, which refuses text that is not valid Unicode anywhere in a record.

Torch-free, and fast enough for the long per-step lists a record holds.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from functools import lru_cache
from typing import Any, Union

from tebench.schema.version import RecordError

_SURROGATE = re.compile("[\ud800-\udfff]")
NUMBER = (int, float)
MAX_INT = 2**63 - 1
"""The largest integer a record holds: what SQLite (history) and every JSON reader in other languages store."""
MAX_EXACT = 2**53
"""An integer given where a number belongs must convert to a float exactly."""


# Type hints are few and reused for every value of a long record: their parts are looked up once.
_origin = lru_cache(maxsize=None)(typing.get_origin)
_args = lru_cache(maxsize=None)(typing.get_args)


@lru_cache(maxsize=None)
def declared(cls: type) -> tuple[tuple[str, Any, Any], ...]:
    """``(name, type hint, metadata)`` of each declared field of dataclass ``cls`` (bookkeeping fields left out).

    A field without a default is required, as its dataclass requires it (``metadata["required"]``).
    """
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name in ("extra", "_keys"):
            continue
        meta = dict(f.metadata)
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if no_default and not _nullable(hints[f.name]):
            meta["required"] = True
        out.append((f.name, hints[f.name], meta))
    return tuple(out)


def check(cls: type, data: Any, path: str = "") -> None:
    """RecordError unless ``data`` is an object whose declared fields (of dataclass ``cls``) hold their types."""
    if not isinstance(data, dict):
        raise RecordError(path, data, f"must be an object, not {_kind(data)}")
    for name, hint, meta in declared(cls):
        where = f"{path}.{name}" if path else name
        if name not in data or data[name] is None:
            # A stored null is "not measured", as an absent key is; only a required field must hold a value.
            if meta.get("required"):
                raise RecordError(where, data.get(name), "missing")
            continue
        shape = meta.get("shape")
        if shape is not None and isinstance(data[name], dict):
            check(shape, data[name], where)  # a dict readers index, validated as the dataclass it serialises
        else:
            value(hint, data[name], where, meta)
    rules = getattr(cls, "rules", None)
    if rules is not None:
        rules(data, path)  # what a type cannot say: checks across fields


def value(hint: Any, v: Any, path: str, meta: Any = None) -> None:
    """RecordError unless ``v`` is of the declared type ``hint`` within the limits in ``meta``."""
    meta = meta or {}
    origin = _origin(hint)
    if hint is Any:
        return
    if origin in (Union, types.UnionType):
        args = _args(hint)
        if v is None:
            if type(None) in args:
                return
            raise RecordError(path, v, f"must be {_describe(hint)}, not null")
        # The first option of the value's own kind decides (its limits apply); no such option: a wrong type.
        option = next((a for a in args if a is not type(None) and _kind_fits(a, v)), None)
        if option is None:
            raise RecordError(path, v, f"must be {_describe(hint)}, not {_kind(v)}")
        value(option, v, path, meta)
        return
    if hint is bool:
        if not isinstance(v, bool):
            raise RecordError(path, v, f"must be true or false, not {_kind(v)}")
        return
    if hint is str:
        if not isinstance(v, str):
            raise RecordError(path, v, f"must be a string, not {_kind(v)}")
        _choices(v, path, meta)
        return
    if hint is int:
        if not isinstance(v, int) or isinstance(v, bool):
            raise RecordError(path, v, f"must be an integer, not {_kind(v)}")
        if abs(v) > MAX_INT:
            raise RecordError(path, v, "is too large for an integer of a record (64 bits)")
        _range(v, path, meta)
        return
    if hint is float:
        if not isinstance(v, NUMBER) or isinstance(v, bool):
            raise RecordError(path, v, f"must be a number, not {_kind(v)}")
        if isinstance(v, int) and abs(v) > MAX_EXACT:
            raise RecordError(path, v, "is too large to be a number of a record")
        if meta.get("finite", True) and not math.isfinite(v):
            raise RecordError(path, v, "must be a finite number")
        _range(v, path, meta)
        return
    if origin in (list, tuple) or hint in (list, tuple):
        if not isinstance(v, list):
            raise RecordError(path, v, f"must be an array, not {_kind(v)}")
        if meta.get("nonempty") and not v:
            raise RecordError(path, v, "must hold at least one value")  # e.g. a round with no timed step
        args = _args(hint)
        if args:
            _items(args[0], v, path, meta)
        return
    if origin is dict or hint is dict:
        if not isinstance(v, dict):
            raise RecordError(path, v, f"must be an object, not {_kind(v)}")
        args = _args(hint)
        if args and args[1] is not Any:
            inner = {"finite": meta["finite"]} if "finite" in meta else None  # finiteness holds at every depth
            for key, item in v.items():
                value(args[1], item, f"{path}.{key}", inner)
        return
    if dataclasses.is_dataclass(hint):
        check(hint, v, path)
        return
    raise TypeError(f"{path}: no validation rule for declared type {hint!r}")  # a declaration this module lacks


def _items(hint: Any, items: list, path: str, meta: Any) -> None:
    # The long lists (per-step times and losses, FP8 amax histories) are numbers: checked in
    # one pass rather than one call per element.
    if hint is float:
        finite = meta.get("finite", True)
        for i, v in enumerate(items):
            if type(v) is float:
                if finite and not math.isfinite(v):
                    raise RecordError(f"{path}[{i}]", v, "must be a finite number")
            elif type(v) is not int or abs(v) > MAX_EXACT:
                value(float, v, f"{path}[{i}]")  # raises, naming what is wrong
        lo = meta.get("items_min")
        if lo is not None and items and min(items) < lo:  # NaN compares false: judged above
            i = next(i for i, v in enumerate(items) if v < lo)
            raise RecordError(f"{path}[{i}]", items[i], f"must be at least {lo}")
        return
    inner = {k: meta[k] for k in ("finite",) if k in meta} or None
    if "items_min" in meta:
        inner = {**(inner or {}), "min": meta["items_min"]}
    for i, v in enumerate(items):
        value(hint, v, f"{path}[{i}]", inner)


def _range(v: float, path: str, meta: Any) -> None:
    lo, hi = meta.get("min"), meta.get("max")
    if lo is not None and v < lo:
        raise RecordError(path, v, f"must be at least {lo}")
    if hi is not None and v > hi:
        raise RecordError(path, v, f"must be at most {hi}")
    _choices(v, path, meta)


def _choices(v: Any, path: str, meta: Any) -> None:
    choices = meta.get("choices")
    if choices is not None and v not in choices:
        raise RecordError(path, v, f"unknown value (known: {', '.join(map(str, choices))})")


def _nullable(hint: Any) -> bool:
    return hint is Any or (_origin(hint) in (Union, types.UnionType) and type(None) in _args(hint))


def _kind_fits(hint: Any, v: Any) -> bool:
    """Whether ``v`` is of the basic kind ``hint`` declares (its limits not yet checked)."""
    origin = _origin(hint) or hint
    if hint is Any:
        return True
    if origin is bool:
        return isinstance(v, bool)
    if origin is int:
        return isinstance(v, int) and not isinstance(v, bool)
    if origin is float:
        return isinstance(v, NUMBER) and not isinstance(v, bool)
    if origin is str:
        return isinstance(v, str)
    if origin in (list, tuple):
        return isinstance(v, list)
    if origin is dict or dataclasses.is_dataclass(hint):
        return isinstance(v, dict)
    return False


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number"}.get(
        type(v), type(v).__name__)


def _describe(hint: Any) -> str:
    if _origin(hint) in (Union, types.UnionType):
        args = _args(hint)
        words = " or ".join(_describe(a) for a in args if a is not type(None))
        return words + (" or null" if type(None) in args else "")
    origin = _origin(hint) or hint
    return {bool: "true or false", str: "a string", int: "an integer", float: "a number", list: "an array",
            tuple: "an array", dict: "an object"}.get(origin, "an object" if dataclasses.is_dataclass(hint)
                                                      else str(hint))


_TEXT_OR_CONTAINER = (str, dict, list)


def check_text(obj: Any, path: str = "") -> None:
    """RecordError for text anywhere in ``obj`` (keys too) that is not valid Unicode (a lone surrogate).

    JSON's ``\\ud800`` escape decodes to a lone surrogate, which cannot be written
    as UTF-8: every report, CSV and terminal line showing it would fail.
    """
    if isinstance(obj, str):
        if _SURROGATE.search(obj):
            raise RecordError(path, obj, "is not valid Unicode text (an unpaired surrogate)")
    elif isinstance(obj, dict):
        for key, item in obj.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _SURROGATE.search(key):
                raise RecordError(path or "(key)", key, "has a key that is not valid Unicode text (an unpaired "
                                                        "surrogate)")
            check_text(item, where)
    elif isinstance(obj, list):
        # Most lists are per-step numbers: only text and containers are walked (one call per number
        # would make reading a long run's file take minutes).
        for i, item in enumerate(obj):
            if type(item) in _TEXT_OR_CONTAINER:
                check_text(item, f"{path}[{i}]")
