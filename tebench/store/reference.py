"""The results file's field reference, generated from the declarations in :mod:`tebench.schema.records`.

Each field's doc lives beside its declaration (``knob(default, "doc", …)``); this module
renders them as the Markdown page ``docs/guide/results-reference.md``, so that what a user
reads is what the reader checks. A test keeps the page in step with the declarations:

    python -m tebench.store.reference > docs/guide/results-reference.md
"""

from __future__ import annotations

import dataclasses

import re
import sys
import types
import typing
from typing import Any, Iterator

from pydantic.fields import FieldInfo

from tebench.plan.modes import MODES
from tebench.plan.recipes import RECIPES
from tebench.schema import records
from tebench.schema.part import MAX_EXACT, PartBase

ROOTS: tuple[tuple[str, type[PartBase]], ...] = (("The header line", records.RunHeader),
                                             ("A case record", records.CaseResult))
"""The two kinds of line of a results file, in the order a file holds them."""
CHOICES: dict[str, tuple[str, ...]] = {records.Case.model_fields["mode"].description or "": tuple(MODES),
                                       records.FP8Options.model_fields["recipe"].description or "": tuple(RECIPES)}
"""The vocabularies the plan checks a record's words against, by the field's doc."""


def _nested(hint: Any) -> list[type[PartBase]]:
    """The record parts a field's type holds: ``Timing | None``, ``list[RankResult]``."""
    out: list[type[PartBase]] = []
    for arg in typing.get_args(hint) or (hint,):
        if isinstance(arg, type) and issubclass(arg, PartBase):
            out.append(arg)
        elif typing.get_args(arg) and typing.get_origin(arg) is not typing.Annotated:
            out.extend(_nested(arg))
    return out


def _hint(f: FieldInfo) -> Any:
    """The field's declared type: pydantic keeps a plain field's Annotated metadata apart from it."""
    return typing.Annotated[(f.annotation, *f.metadata)] if f.metadata else f.annotation


def _type_name(hint: Any) -> str:
    """A type as a reader of JSON thinks of it: ``number``, ``list of Summary``, ``object``…"""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(hint)
        return "number" if "number" in meta else _type_name(base)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args]
        return " or ".join(dict.fromkeys(names))
    if origin is list:
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return "object"
    if hint is bool:
        return "boolean"
    if hint is int:
        return "integer"
    if hint is float:
        return "number"
    if hint is str:
        return "text"
    if isinstance(hint, type) and issubclass(hint, PartBase):
        return f"[{hint.__name__}](#{hint.__name__.lower()})"
    if dataclasses.is_dataclass(hint):
        return "object"  # a case's settings: the matrix's, declared and documented there
    return "any"


def _limits(f: FieldInfo) -> str:
    """A field's limits in words: required, range, choices."""
    out = []
    extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
    if extra.get("required"):
        out.append("required")
    choices = CHOICES.get(f.description or "", ()) or _choices(_hint(f))
    if choices:
        out.append("one of " + ", ".join(f"`{c}`" for c in choices))
    for m in f.metadata:  # an integer's own 64-bit range is no limit worth a word
        if getattr(m, "ge", None) is not None and abs(m.ge) < MAX_EXACT:
            out.append(f"≥ {m.ge:g}")
        if getattr(m, "le", None) is not None and abs(m.le) < MAX_EXACT:
            out.append(f"≤ {m.le:g}")
    lengths = [getattr(m, k) for m in f.metadata for k in ("min_length", "max_length") if hasattr(m, k)]
    if len(lengths) == 2 and lengths[0] == lengths[1]:
        out.append(f"{lengths[0]} values")
    for m in _item_limits(f.annotation):
        out.append(f"each ≥ {m:g}")
    if "AnyNum" in _spelled(_hint(f)):
        out.append("NaN and ±inf allowed")
    return "; ".join(out)


def _item_limits(hint: Any) -> list[float]:
    """The lower limit each number of a list must keep (``list[Annotated[Num, Interval(ge=0)]]``)."""
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint)
        if typing.get_origin(item) is typing.Annotated:
            return [m.ge for m in typing.get_args(item)[1:]
                    if getattr(m, "ge", None) is not None and abs(m.ge) < MAX_EXACT]
        return []
    return [x for a in typing.get_args(hint) if typing.get_origin(hint) is not typing.Annotated
            for x in _item_limits(a)]


def _choices(hint: Any) -> tuple[Any, ...]:
    from tebench.schema.part import OneOf

    if typing.get_origin(hint) is typing.Annotated:
        for m in typing.get_args(hint)[1:]:
            if isinstance(m, OneOf):
                return m.choices
    for arg in typing.get_args(hint):
        found = _choices(arg)
        if found:
            return found
    return ()


def _spelled(hint: Any) -> str:
    """Whether a number of the type may be NaN: the float member of AnyNum is not limited to finite."""
    from tebench.schema.part import AnyNum

    def walk(h: Any) -> bool:
        return h == AnyNum or any(walk(a) for a in typing.get_args(h))
    return "AnyNum" if walk(hint) else ""


def _first_line(text: str | None) -> str:
    return re.sub(r"\s+", " ", (text or "").strip().split("\n\n")[0])


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _parts(roots: tuple[tuple[str, type[PartBase]], ...]) -> Iterator[tuple[str, type[PartBase]]]:
    """Every part reachable from the roots, each once, depth first in declaration order."""
    seen: set[type] = set()

    def walk(title: str, cls: type[PartBase]) -> Iterator[tuple[str, type[PartBase]]]:
        if cls in seen:
            return
        seen.add(cls)
        yield title, cls
        for f in cls.model_fields.values():
            for part in _nested(_hint(f)):
                yield from walk(part.__name__, part)

    for title, cls in roots:
        yield from walk(title, cls)


def markdown() -> str:
    """The reference page: one table per part, every declared field with its type, limits and doc."""
    out = ["# Results file: every field",
           "",
           "<!-- Generated by `python -m tebench.store.reference` from tebench/schema/records.py; "
           "edit the declarations, not this page. -->",
           "",
           "A results file (`results.jsonl`) holds one JSON object per line: a header, then one record per "
           "case and round. Every field below is optional unless marked required; a reader keeps keys it "
           "does not know, and a record from an older tebench lacks the fields added since "
           "([What a case records](results.md) says how versions are kept). A field shown as a link holds the "
           "object of that name.",
           ""]
    for title, cls in _parts(ROOTS):
        heading = cls.__name__ if title == cls.__name__ else f"{title}: {cls.__name__}"
        out += [f"## {heading}", "", _first_line(cls.__doc__), "",
                "| field | type | limits | what it holds |", "|---|---|---|---|"]
        for name, f in cls.model_fields.items():
            out.append(f"| `{f.alias or name}` | {_cell(_type_name(_hint(f)))} | {_cell(_limits(f))} | "
                       f"{_cell(_first_line(f.description))} |")
        out.append("")
    return "\n".join(out)


def undocumented() -> list[str]:
    """``Part.field`` of every declared field without a doc (a test keeps this empty)."""
    return [f"{cls.__name__}.{name}" for _, cls in _parts(ROOTS) for name, f in cls.model_fields.items()
            if not (f.description or "").strip()]


if __name__ == "__main__":
    sys.stdout.write(markdown() + "\n")
