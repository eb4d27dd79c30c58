"""The base of every record part: a pydantic v2 model that keeps what it read, as it was read.

A part's fields are declared once, with their type (the annotation) and, where they have them,
their limits and doc (:func:`field`). pydantic validates a stored JSON object against those
declarations at every depth; :func:`record_error` turns its first complaint into a
:class:`~tebench.schema.version.RecordError` naming the field's path and the value.

Four rules of the results file are kept here, because pydantic alone would break them:

* **Round trip.** ``Part.from_dict(d).to_dict() == d``, key order included: the object
  :meth:`Part.from_dict` returns keeps the JSON it was read from (or its text) in a private
  attribute, and :meth:`Part.to_dict` writes the keys read in its order at every depth; keys this
  tebench does not declare (written by a newer one) ride along unchecked in pydantic's extra and
  are written back as they were. A stored null stays null, an absent key stays absent.
* **One way to write.** :meth:`Part.to_dict` follows one rule, whichever way the part was made
  (its constructor, :meth:`Part.from_dict`, or pydantic validating it inside another part):

  - it writes the fields it was *given*: read from the object, passed to the constructor, or
    assigned since (pydantic's ``model_fields_set``);
  - a part with no stored object to follow (neither its own nor its parent's) also writes its
    ``ALWAYS`` fields and its ``required`` ones, given or not: a part read keeps the keys it had
    (an older file lacks fields added since);
  - a None is written (as null) only for an ``ALWAYS`` field or a key the stored object held;
  - keys in the stored object's order where there is one, else ``FIRST`` then declaration order;
    undeclared keys (pydantic's extra) after the declared ones.

  So a part built here, written, and read back (with or without its text) writes the same object.
  A :class:`Row` (a kernel row, thousands to a record) keeps no stored object of its own: its
  parent's gives its order, and pydantic initialises no private attribute for it.
* **Numbers as stored.** A field holding a number is :data:`Num` (``int | float``, both strict): a
  stored ``3`` stays ``3`` and is written back as ``3`` (a plain ``float`` field would turn it into
  ``3.0``), and a boolean is not a number.
* **Required means present.** A field marked ``required`` must be stored and not null whenever its
  part is; a record built in this process may leave it at its default (which it then writes).

Only pydantic's public API is used: the ``__get_pydantic_core_schema__`` hook and
``pydantic_core.core_schema`` for the checks below, ``PrivateAttr`` for the stored object,
``model_extra`` and ``model_fields_set``. Reading is pydantic-core's work wherever it can be: no
model validators, limits pushed into the number types (:class:`Limits`). A Python call per part or
per number, multiplied by the 700,000 parts and millions of numbers of a 10,000-record file, was
most of the reading time (docs/findings/speed.md); the private attribute costs one per
:class:`Part` (pydantic initialises it), hence :class:`Row`.

Torch-free and numpy-free.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import types
import typing
from typing import Annotated, Any, ClassVar, Iterable, Union

from pydantic import AllowInfNan, BaseModel, ConfigDict, Field, PrivateAttr, Strict, ValidationError, ValidationInfo
from annotated_types import Interval
from pydantic_core import PydanticCustomError, core_schema

from tebench.schema.version import RecordError

MAX_INT = 2**63 - 1
"""The largest integer a record holds: what SQLite (history) and every JSON reader in other languages store."""
MAX_EXACT = 2**53
"""An integer given where a number belongs must convert to a float exactly."""


class Limits:
    """The range of a number field, checked natively by pydantic-core in each member of its type.

    pydantic checks a limit put on a union (``Num`` is ``int | float``) by a call into Python per
    value; here each member's own schema gets it, merged with the member's range (the narrower
    wins). A type without a numeric schema falls back to pydantic's check. ``ge`` … are readable
    as on ``annotated_types.Interval`` (the results reference shows them).
    """

    _NARROWER = {"ge": max, "gt": max, "le": min, "lt": min}

    def __init__(self, ge: float | None = None, le: float | None = None, gt: float | None = None,
                 lt: float | None = None):
        self.ge, self.le, self.gt, self.lt = ge, le, gt, lt

    def _bounds(self) -> dict[str, float]:
        return {k: v for k, v in (("ge", self.ge), ("le", self.le), ("gt", self.gt), ("lt", self.lt))
                if v is not None}

    def _push(self, schema: Any) -> bool:
        kind_ = schema.get("type")
        if kind_ in ("int", "float"):
            for key, bound in self._bounds().items():
                if kind_ == "int" and bound != int(bound):  # the same range in whole numbers (ge 1e-6: ge 1)
                    bound = math.ceil(bound) if key in ("ge", "lt") else math.floor(bound)
                schema[key] = bound if schema.get(key) is None else self._NARROWER[key](schema[key], bound)
            return True
        if kind_ in ("nullable", "function-after"):
            return self._push(schema["schema"])
        if kind_ == "chain":  # a float member (_FloatOnly): the limits go on its float step
            return any([self._push(step) for step in schema["steps"] if step.get("type") != "is-instance"])
        if kind_ == "union":
            return all(self._push(c[0] if isinstance(c, tuple) else c) for c in schema["choices"])
        return False

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        schema = handler(source)
        native = copy.deepcopy(schema)
        if self._push(native):
            return native
        return handler(Annotated[source, Interval(**self._bounds())])  # pydantic's own check


class _FloatOnly:
    """The float member of a number union takes floats only: pydantic's strict float also takes an
    integer and rounds it to the nearest float (9007199254740993 read as 9007199254740992.0). Checked
    natively (an is-instance step before the float's own checks)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.chain_schema([core_schema.is_instance_schema(float), handler(source)])


def _exact_float(value: int) -> float:
    """An integer past ±2**53 given where a number belongs: the float it is exactly, else refused."""
    try:
        as_float = float(value)
    except OverflowError:
        as_float = math.inf
    if not math.isfinite(as_float) or int(as_float) != value:
        raise PydanticCustomError("inexact_integer", "an integer past 2**53 that a number (a 64-bit float) "
                                  "cannot hold exactly: refused, not rounded")
    return as_float


class _ExactFloat:
    """The member of a number union for integers past ±2**53 (a call into Python for those only)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(_exact_float, handler(source))


# The types' ranges are pydantic-core's own checks, run without a call into Python (a file of 10,000
# records holds millions of numbers). A field's limits (``ge=0``) merge with its type's, the narrower
# of each pair winning.
Int = Annotated[int, Strict(), Limits(ge=-MAX_INT, le=MAX_INT)]
"""An integer of a record (a boolean is not one; at most 64 bits)."""
_NUMBER_INT = Annotated[int, Strict(), Limits(ge=-MAX_EXACT, le=MAX_EXACT)]
_BIG_INT = Annotated[int, Strict(), _ExactFloat()]
Num = Annotated[Union[_NUMBER_INT, _BIG_INT, Annotated[float, Strict(), AllowInfNan(False), _FloatOnly()]], "number"]
"""A finite number of a record, kept as stored: an integer stays an integer (past 2**53, a float it
converts to exactly; one that does not is refused, never rounded)."""
AnyNum = Annotated[Union[_NUMBER_INT, _BIG_INT, Annotated[float, Strict(), _FloatOnly()]], "number"]
"""A number that may be NaN or ±inf: a diverged run's loss, an overflowed FP8 scale (data, not damage)."""
Bool = Annotated[bool, Strict()]
"""True or false, never 0 or 1."""
Str = Annotated[str, Strict()]
"""Text."""


class OneOf:
    """``Annotated[str, OneOf("a", "b")]``: a value of a fixed vocabulary (the reference lists it)."""

    def __init__(self, *choices: Any):
        self.choices = tuple(choices)

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        choices = frozenset(self.choices)
        known = ", ".join(map(str, self.choices))

        def check(v: Any) -> Any:
            if v not in choices:
                raise PydanticCustomError("choice", "unknown value (known: {known})", {"known": known})
            return v
        return core_schema.no_info_after_validator_function(check, handler(source))


def field(default: Any, doc: str, *, required: bool = False, show: dict[str, str] | None = None,
          **limits: Any) -> Any:
    """A declared field: its default, its doc (the results reference shows it) and its limits.

    ``limits`` are pydantic's (``ge``, ``le``, ``min_length``, ``alias`` …). ``required``: the field
    must be stored and not null whenever its part is (a part built here may leave it at its
    default). ``show``: how a report labels the field (see :func:`shown`). A default of ``list``
    or ``dict`` (the type), or of any class, is a fresh instance per part.
    """
    extra: dict[str, Any] | None = {**({"required": True} if required else {}), **(show or {})} or None
    bounds = {k: limits.pop(k) for k in ("ge", "le", "gt", "lt") if k in limits}
    if isinstance(default, type):
        info = Field(default_factory=default, description=doc, json_schema_extra=extra, **limits)
    else:
        info = Field(default, description=doc, json_schema_extra=extra, **limits)
    if bounds:
        info.metadata.append(Limits(**bounds))
    return info


def shown(cls: type[BaseModel]) -> list[tuple[str, dict[str, Any]]]:
    """``(field, how a report labels it)`` of each field of ``cls`` declared with ``show``, in order."""
    return [(name, dict(f.json_schema_extra)) for name, f in cls.model_fields.items()
            if isinstance(f.json_schema_extra, dict) and "label" in f.json_schema_extra]


_STORED: dict[str, bool] = {"stored": True}
"""The validation context of an object read from a file (:meth:`Part.from_dict`)."""


class PartBase(BaseModel):
    """What every part is and does (see the module's doc for its rules); a part is a :class:`Part`
    (keeps the object it was read from) or a :class:`Row` (does not)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_default=False,
                              protected_namespaces=(), revalidate_instances="never")

    ALWAYS: ClassVar[tuple[str, ...]] = ()
    """Fields written even when None or not given, by a part with no stored object to follow."""
    FIRST: ClassVar[tuple[str, ...]] = ()
    """Fields written first by a part with no stored object to follow (identity before measurements, for a
    human reading the line)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        # The one check pydantic cannot make natively: a required field that a part built here may leave
        # at its default must be stored, and not null. Only parts that have one pay for the call.
        schema = handler(source)
        required = cls._required()
        if not required:
            return schema

        def held(data: Any, info: ValidationInfo) -> Any:
            if isinstance(data, dict) and info.context is _STORED:
                for key in required:
                    if data.get(key) is None:
                        raise PydanticCustomError("required", "missing", {"at": key})
            return data
        return core_schema.with_info_before_validator_function(held, schema)

    @classmethod
    @functools.cache
    def _required(cls) -> tuple[str, ...]:
        """The stored keys of the fields declared ``required`` that have a default (pydantic holds the others)."""
        return tuple(f.alias or name for name, f in cls.model_fields.items()
                     if isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get("required")
                     and not f.is_required())

    @classmethod
    @functools.cache
    def _stored_names(cls) -> tuple[tuple[str, str], ...]:
        """``(attribute, key as stored)`` of each declared field, in declaration order."""
        return tuple((name, f.alias or name) for name, f in cls.model_fields.items())

    @classmethod
    @functools.cache
    def part_fields(cls) -> tuple[str, ...]:
        """The stored keys of the fields that hold a nested part (``Timing | None`` …)."""
        return tuple(f.alias or name for name, f in cls.model_fields.items()
                     if any(isinstance(t, type) and issubclass(t, PartBase) for t in _options(f.annotation)))

    @classmethod
    def from_dict(cls, d: Any, path: str = "", *, line: bytes | str | None = None) -> Any:
        """The part of a JSON object, validated; RecordError naming the first damaged field's path.

        ``line``: the JSON text ``d`` was decoded from, kept instead of ``d`` for :meth:`to_dict`'s key
        order (a reader holding many records keeps the text, not a second tree of dicts)."""
        part = cls._validated(d, path)
        part._keep(_Source(d if line is None else line))
        return part

    @classmethod
    def _validated(cls, d: Any, path: str) -> Any:
        if not isinstance(d, dict):
            raise RecordError(path, d, f"must be an object, not {kind(d)}")
        try:
            return cls.model_validate(d, context=_STORED)
        except ValidationError as exc:
            raise record_error(exc, d, path, cls) from None

    @classmethod
    def check(cls, d: Any, path: str = "") -> None:
        """RecordError unless ``d`` has the declared shape at every depth (its schema version is not looked at)."""
        cls._validated(d, path)

    @property
    def extra(self) -> dict[str, Any]:
        """Keys this tebench does not declare, as read (written back unchanged)."""
        extra = self.model_extra
        return extra if extra is not None else {}

    def was_stored(self, key: str) -> bool:
        """Whether the JSON object :meth:`from_dict` read this part from held ``key`` (a stored null
        counts); False for a part not read by :meth:`from_dict`."""
        source = self._kept_source()
        read = source.json() if source is not None else None
        return isinstance(read, dict) and key in read

    def stored_line(self) -> bytes | str | None:
        """The JSON text this part was read from, where its reader vouched that the text is what :meth:`to_dict`
        writes back (:meth:`vouch_line`) and no field of the part was assigned since: a writer may copy it
        rather than write the part anew. None otherwise, and for a part built here."""
        source = self._kept_source()
        return source.value if source is not None and source.verbatim else None

    def vouch_line(self) -> None:
        """Vouch that the text :meth:`from_dict` kept holds what :meth:`to_dict` writes back: nothing was
        upgraded, completed or restored on the way, and the text starts as the writer's does (a line the writer
        wrote is then what it would write again; one edited by hand past its start may spell the same values
        otherwise). Its reader knows; an assignment to a field withdraws it (:meth:`stored_line`). Parts nested
        in this one are not to be changed in place while it holds (no code does)."""
        source = self._kept_source()
        if source is not None and isinstance(source.value, (bytes, str)):
            source.verbatim = True

    def leave_out(self, names: tuple[str, ...]) -> None:
        """Drop the values of the fields ``names`` from a part whose line is vouched for (:meth:`vouch_line`; the
        line keeps them), so that a reader that only checks and judges holds less. Such a part can be copied
        (its line) but not written anew: :meth:`to_dict` refuses it. Not an assignment: the vouch stands."""
        source = self._kept_source()
        if source is None or not source.verbatim:
            raise ValueError("only a part whose line is vouched for can leave fields out")
        for name in names:
            object.__setattr__(self, name, None)  # the line holds the value; a field assignment would withdraw it
        source.left_out = names

    def left_out(self) -> tuple[str, ...]:
        """The fields :meth:`leave_out` dropped (their values are in the line the part was read from)."""
        source = self._kept_source()
        return source.left_out if source is not None else ()

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_"):
            source = self._kept_source()
            if source is not None:
                source.verbatim = False
        super().__setattr__(name, value)

    def _keep(self, source: "_Source") -> None:
        """Keep the object :meth:`from_dict` read (a :class:`Row` does not)."""

    def _kept_source(self) -> "_Source | None":
        return None

    @classmethod
    @functools.cache
    def _kept(cls) -> frozenset[str]:
        """The stored keys written even when not given: ``ALWAYS`` and the fields declared ``required``."""
        return frozenset((*cls.ALWAYS, *cls._required()))

    def to_dict(self, _read: Any = None) -> dict[str, Any]:
        """The JSON object again, by the one rule of the module's doc (the same for a part built here
        and one read). ``_read``: the JSON object a parent part read this one from."""
        source = self._kept_source()
        if source is not None:
            if source.left_out:
                raise ValueError(f"a part read without {', '.join(source.left_out)} cannot be written anew: "
                                 "read its line again")
            _read = source.json()
        if not isinstance(_read, dict):
            _read = None
        names: Iterable[tuple[str, str]] = self._stored_names()
        if _read is None and self.FIRST:
            by_key = dict((k, (n, k)) for n, k in names)
            names = [*(by_key[k] for k in self.FIRST), *(nk for nk in names if nk[1] not in self.FIRST)]
        given, kept = self.model_fields_set, self._kept()
        out: dict[str, Any] = {}
        for name, key in names:
            if name not in given and (_read is not None or key not in kept):
                continue  # a part read keeps the keys it had: an older file lacks newer ALWAYS ones
            value = getattr(self, name)
            if value is None and key not in self.ALWAYS and (_read is None or key not in _read):
                continue  # a None is written where it was stored, or where ALWAYS says so
            out[key] = _plain(value, None if _read is None else _read.get(key))
        out.update(self.extra)
        if _read is None:
            return out
        order = {k: i for i, k in enumerate(_read)}
        return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))


class Part(PartBase):
    """A part of a record that keeps the JSON object :meth:`from_dict` read it from."""

    _source: "_Source | None" = PrivateAttr(default=None)
    """The JSON object :meth:`from_dict` read this part from (or its text), whose key order
    :meth:`to_dict` follows at every depth; None for a part built here or validated inside another."""

    def _keep(self, source: "_Source") -> None:
        self._source = source

    def _kept_source(self) -> "_Source | None":
        return self._source  # read once per to_dict: a private attribute is read through pydantic's __getattr__


class Row(PartBase):
    """A part that keeps no object of its own: a row of a long list (a record holds thousands of
    kernel rows), read only inside its parent, whose stored object gives its key order. A declared
    private attribute makes pydantic run Python code for every part it validates; a row spares it."""


class _Source:
    """The JSON object a part was read from, or its text (decoded again only when the part is written)."""

    __slots__ = ("value", "verbatim", "left_out")

    def __init__(self, value: Any):
        self.value = value
        self.verbatim = False
        """Whether ``value`` is text its part writes back unchanged (:meth:`PartBase.vouch_line`)."""
        self.left_out: tuple[str, ...] = ()
        """Fields whose values only ``value`` holds (:meth:`PartBase.leave_out`)."""

    def json(self) -> Any:
        return json.loads(self.value) if isinstance(self.value, (bytes, str)) else self.value

    def __eq__(self, other: object) -> bool:  # pydantic compares the private attributes of two parts
        return isinstance(other, _Source) and self.json() == other.json()

    __hash__ = None  # type: ignore[assignment]


def _options(hint: Any) -> tuple[Any, ...]:
    """The types a field may hold: a union's members, else the hint itself."""
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _plain(value: Any, read: Any) -> Any:
    """A field's JSON value; ``read``: what was stored there, whose key order a part read keeps."""
    if isinstance(value, PartBase):
        return value.to_dict(read)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # A case's settings (flat): those stored, in their order (an older file lacks settings added since, which
        # read as their defaults), else every one.
        names = read if isinstance(read, dict) else [f.name for f in dataclasses.fields(value)]
        return {name: getattr(value, name) for name in names}
    if isinstance(value, list) and any(isinstance(v, PartBase) for v in value):
        same = isinstance(read, list) and len(read) == len(value)
        return [v.to_dict(read[i] if same else None) if isinstance(v, PartBase) else v for i, v in enumerate(value)]
    return value


# --- pydantic's complaint in the words of a results file ------------------------------------------

_KIND_WANTED = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
                "float_type": "a number", "float_parsing": "a number", "string_type": "a string",
                "bool_type": "true or false", "bool_parsing": "true or false", "list_type": "an array",
                "tuple_type": "an array", "dict_type": "an object", "model_type": "an object",
                "model_attributes_type": "an object", "finite_number": "a number",
                "is_instance_of": "a number"}  # only the float member of a number union (_FloatOnly) checks a class


def kind(v: Any) -> str:
    """What a JSON value is, in words: ``a string``, ``an object``, ``null`` …"""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number"}.get(
        type(v), type(v).__name__)


def _real_path(data: Any, loc: tuple[Any, ...], base: str) -> tuple[str, Any, tuple[Any, ...]]:
    """The path of ``loc`` in ``data`` as a results file names it (``timing.samples_ms[3]``), the value
    there, and the steps of ``loc`` that are keys and indexes of ``data`` (not pydantic's own names of
    union members and validators)."""
    path, value, steps = base, data, []
    for step in loc:
        if isinstance(value, dict) and step in value:
            value = value[step]
            path = f"{path}.{step}" if path else str(step)
        elif isinstance(value, list) and isinstance(step, int) and 0 <= step < len(value):
            value = value[step]
            path = f"{path}[{step}]"
        else:
            continue
        steps.append(step)
    return path, value, tuple(steps)


def _nullable(model: type[BaseModel] | None, steps: tuple[Any, ...]) -> bool:
    """Whether the field ``steps`` lead to in ``model`` may hold null (a message then says so)."""
    hint: Any = model
    for step in steps:
        if isinstance(step, int):
            items = [typing.get_args(o) for o in _options(hint) if typing.get_origin(o) is list]
            hint = items[0][0] if items and items[0] else None
            continue
        parts = [o for o in _options(hint) if isinstance(o, type) and issubclass(o, BaseModel)]
        fields = {(f.alias or n): f for n, f in parts[0].model_fields.items()} if parts else {}
        if step not in fields:
            return False
        hint = fields[step].annotation
    return hint is not None and type(None) in _options(hint)


def record_error(exc: ValidationError, data: Any, base: str = "",
                 model: type[BaseModel] | None = None) -> RecordError:
    """The first of pydantic's complaints as a RecordError: the field's path, its value, what is wrong.

    ``model``: the part validated, to say "or null" of a field that may hold it.
    """
    errors = exc.errors(include_url=False)
    first = errors[0]
    path, value, steps = _real_path(data, first["loc"], base)
    at = (first.get("ctx") or {}).get("at")
    if at is not None:  # a check of the whole part about one of its keys (a required one, the metric)
        path, value = f"{path}.{at}" if path else str(at), value.get(at) if isinstance(value, dict) else None
    # A union (int | float, X | None) reports one complaint per member at the same place: say them as one.
    same = [e for e in errors if _real_path(data, e["loc"], base)[0] == path] if at is None else [first]
    types = [e["type"] for e in same]
    ctx = first.get("ctx") or {}
    if "required" in types:
        return RecordError(path, None, "missing")
    if first["type"] == "missing":  # an absent key: the loc's last step names it
        key = first["loc"][-1]
        return RecordError(f"{path}.{key}" if path else str(key), None, "missing")
    for e in same:  # an integer past 2**53 in a number field: its own words, not the int member's range
        if e["type"] == "inexact_integer":
            return RecordError(path, value, e["msg"])
    for e in same:
        if e["type"] in ("choice", "unknown_key"):
            return RecordError(path, value, e["msg"])
        if e["type"] == "finite_number" and isinstance(value, float) and not math.isfinite(value):
            return RecordError(path, value, "must be a finite number")
        if e["type"] in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
            return RecordError(path, value, _range_words(e["type"], e.get("ctx") or {}, value))
        if e["type"] in ("too_short", "too_long"):
            return RecordError(path, value, _length_words(e.get("ctx") or {}))
    wanted = [w for w in dict.fromkeys(_KIND_WANTED.get(t) for t in types) if w]
    if wanted:
        if "a number" in wanted and "an integer" in wanted:
            wanted.remove("an integer")
        if _nullable(model, steps):
            wanted.append("null")
        return RecordError(path, value, f"must be {' or '.join(wanted)}, not {kind(value)}")
    if first["type"] == "value_error":
        return RecordError(path, value, str(ctx.get("error", first["msg"])))
    return RecordError(path, value, first["msg"])


def _range_words(kind_: str, ctx: dict[str, Any], value: Any) -> str:
    bound = next(iter(ctx.values()), None)
    if isinstance(value, int) and isinstance(bound, int) and abs(bound) in (MAX_INT, MAX_EXACT):
        return ("is too large for an integer of a record (64 bits)" if abs(bound) == MAX_INT
                else "is too large to be a number of a record")
    if isinstance(bound, float) and bound.is_integer():
        bound = int(bound)  # pydantic-core gives a float member's limit as a float: 0.0 is written 0
    return f"must be at least {bound}" if kind_.startswith("greater") else f"must be at most {bound}"


def _length_words(ctx: dict[str, Any]) -> str:
    if ctx.get("min_length") == 1 and "max_length" not in ctx:
        return "must hold at least one value"
    if "max_length" not in ctx:
        return f"must hold at least {ctx.get('min_length')} values"
    if "min_length" not in ctx:
        return f"must hold at most {ctx.get('max_length')} values"
    return f"must hold {ctx.get('min_length')} to {ctx.get('max_length')} values"
