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
    _part_checker(cls)(data, path)


def value(hint: Any, v: Any, path: str, meta: Any = None) -> None:
    """RecordError unless ``v`` is of the declared type ``hint`` within the limits in ``meta``."""
    _checker(hint, _freeze(meta))(v, path)


# Each declaration becomes a checking function once (per type hint and limits), so that the
# millions of values in a long file (per-step lists, FP8 state per layer and quantizer) cost
# one call each, not a walk through the type hint each time.
Checker = typing.Callable[[Any, str], None]


def _freeze(meta: Any) -> tuple:
    if not meta:
        return ()
    return tuple(sorted((k, tuple(v) if isinstance(v, (list, set, frozenset)) else v) for k, v in meta.items()))


@lru_cache(maxsize=None)
def _part_checker(cls: type) -> Checker:
    fields = []
    for name, hint, meta in declared(cls):
        shape = meta.get("shape")
        fields.append((name, bool(meta.get("required")), _part_checker(shape) if shape is not None else None,
                       _checker(hint, _freeze(meta))))
    rules = getattr(cls, "rules", None)

    def check_part(data: Any, path: str) -> None:
        if not isinstance(data, dict):
            raise RecordError(path, data, f"must be an object, not {_kind(data)}")
        for name, required, shape, checker in fields:
            v = data.get(name)
            where = f"{path}.{name}" if path else name
            if v is None:
                # A stored null is "not measured", as an absent key is; only a required field must hold a value.
                if required:
                    raise RecordError(where, v, "missing")
                continue
            if shape is not None and isinstance(v, dict):
                shape(v, where)  # a dict readers index, validated as the dataclass it serialises
            else:
                checker(v, where)
        if rules is not None:
            rules(data, path)  # what a type cannot say: checks across fields

    return check_part


def _nothing(v: Any, path: str) -> None:
    return None


@lru_cache(maxsize=None)
def _checker(hint: Any, frozen: tuple) -> Checker:
    """The function that checks one value against ``hint`` and the limits ``frozen`` (a frozen knob metadata)."""
    meta = dict(frozen)
    origin = _origin(hint)
    if hint is Any:
        return _nothing
    if origin in (Union, types.UnionType):
        return _union(hint, frozen)
    if hint is bool:
        def check_bool(v: Any, path: str) -> None:
            if not isinstance(v, bool):
                raise RecordError(path, v, f"must be true or false, not {_kind(v)}")
        return check_bool
    if hint is str:
        choices = meta.get("choices")

        def check_str(v: Any, path: str) -> None:
            if not isinstance(v, str):
                raise RecordError(path, v, f"must be a string, not {_kind(v)}")
            if choices is not None and v not in choices:
                _choices(v, path, meta)
        return check_str
    if hint is int:
        limited = any(k in meta for k in ("min", "max", "choices"))

        def check_int(v: Any, path: str) -> None:
            if type(v) is not int:
                if not isinstance(v, int) or isinstance(v, bool):
                    raise RecordError(path, v, f"must be an integer, not {_kind(v)}")
            if abs(v) > MAX_INT:
                raise RecordError(path, v, "is too large for an integer of a record (64 bits)")
            if limited:
                _range(v, path, meta)
        return check_int
    if hint is float:
        finite = meta.get("finite", True)
        limited = any(k in meta for k in ("min", "max", "choices"))

        def check_float(v: Any, path: str) -> None:
            t = type(v)
            if t is not float:
                if not isinstance(v, NUMBER) or isinstance(v, bool):
                    raise RecordError(path, v, f"must be a number, not {_kind(v)}")
                if isinstance(v, int) and abs(v) > MAX_EXACT:
                    raise RecordError(path, v, "is too large to be a number of a record")
            if finite and not math.isfinite(v):
                raise RecordError(path, v, "must be a finite number")
            if limited:
                _range(v, path, meta)
        return check_float
    if origin in (list, tuple) or hint in (list, tuple):
        return _list(hint, frozen)
    if origin is dict or hint is dict:
        return _dict(hint, frozen)
    if dataclasses.is_dataclass(hint):
        return _part_checker(hint)
    raise TypeError(f"no validation rule for declared type {hint!r}")  # a declaration this module lacks


def _union(hint: Any, frozen: tuple) -> Checker:
    args = _args(hint)
    nullable = type(None) in args
    options = tuple((a, _checker(a, frozen)) for a in args if a is not type(None))
    if len(options) == 1:
        (only, only_check), = options

    def check_union(v: Any, path: str) -> None:
        if v is None:
            if nullable:
                return
            raise RecordError(path, v, f"must be {_describe(hint)}, not null")
        if len(options) == 1:
            if not _kind_fits(only, v):
                raise RecordError(path, v, f"must be {_describe(hint)}, not {_kind(v)}")
            only_check(v, path)
            return
        # The first option of the value's own kind decides (its limits apply); no such option: a wrong type.
        for option, option_check in options:
            if _kind_fits(option, v):
                option_check(v, path)
                return
        raise RecordError(path, v, f"must be {_describe(hint)}, not {_kind(v)}")
    return check_union


def _list(hint: Any, frozen: tuple) -> Checker:
    meta = dict(frozen)
    nonempty = meta.get("nonempty")
    args = _args(hint)
    item = args[0] if args else None
    if item is float:
        finite = meta.get("finite", True)
        lo = meta.get("items_min")

        # The long lists (per-step times and losses, FP8 amax histories) are numbers: checked in
        # one pass rather than one call per element.
        def check_floats(v: Any, path: str) -> None:
            if not isinstance(v, list):
                raise RecordError(path, v, f"must be an array, not {_kind(v)}")
            if nonempty and not v:
                raise RecordError(path, v, "must hold at least one value")  # e.g. a round with no timed step
            for i, x in enumerate(v):
                if type(x) is float:
                    if finite and not math.isfinite(x):
                        raise RecordError(f"{path}[{i}]", x, "must be a finite number")
                elif type(x) is not int or abs(x) > MAX_EXACT:
                    value(float, x, f"{path}[{i}]")  # raises, naming what is wrong
            if lo is not None and v and min(v) < lo:  # NaN compares false: judged above
                i = next(i for i, x in enumerate(v) if x < lo)
                raise RecordError(f"{path}[{i}]", v[i], f"must be at least {lo}")
        return check_floats
    inner: dict[str, Any] = {k: meta[k] for k in ("finite",) if k in meta}
    if "items_min" in meta:
        inner["min"] = meta["items_min"]
    check_item = _checker(item, _freeze(inner)) if item is not None else None

    def check_list(v: Any, path: str) -> None:
        if not isinstance(v, list):
            raise RecordError(path, v, f"must be an array, not {_kind(v)}")
        if nonempty and not v:
            raise RecordError(path, v, "must hold at least one value")
        if check_item is not None:
            for i, x in enumerate(v):
                check_item(x, f"{path}[{i}]")
    return check_list


def _dict(hint: Any, frozen: tuple) -> Checker:
    meta = dict(frozen)
    args = _args(hint)
    check_item = None
    if args and args[1] is not Any:
        inner = {"finite": meta["finite"]} if "finite" in meta else {}  # finiteness holds at every depth
        check_item = _checker(args[1], _freeze(inner))

    def check_dict(v: Any, path: str) -> None:
        if not isinstance(v, dict):
            raise RecordError(path, v, f"must be an object, not {_kind(v)}")
        if check_item is not None:
            for key, x in v.items():
                check_item(x, f"{path}.{key}")
    return check_dict


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
