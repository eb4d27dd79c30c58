"""The one rule of ``Part.to_dict``: a part writes the same object however it was made."""

from __future__ import annotations

import json
from pathlib import Path

from tebench.schema.part import Int, Part, Row, Str, field


class Inner(Part):
    a: Int | None = field(None, "a")
    b: Int | None = field(None, "b")


class Outer(Part):
    ALWAYS = ("kind", "note")
    FIRST = ("kind",)

    n: Int | None = field(None, "n")
    kind: Str = field("x", "kind")
    note: Str | None = field(None, "note")
    req: Int = field(0, "req", required=True)
    inner: Inner | None = field(None, "inner")
    opt: Str | None = field(None, "opt")
    tags: list[Str] = field(list, "tags")


def test_a_built_part_writes_given_fields_always_and_required_ones():
    d = Outer(n=1, opt=None, inner=Inner(b=2)).to_dict()
    assert list(d) == ["kind", "n", "note", "req", "inner"]
    assert d["note"] is None and d["req"] == 0 and d["inner"] == {"b": 2}
    assert "opt" not in d and "tags" not in d  # a None given is not stored; a default not given is not written


def test_built_read_and_validated_write_the_same_object():
    built = Outer(n=1, opt=None, tags=["t"], inner=Inner(b=2, a=None))
    d = built.to_dict()
    text = json.dumps(d)
    for again in (Outer.from_dict(d), Outer.from_dict(json.loads(text), line=text), Outer.model_validate(d)):
        assert json.dumps(again.to_dict()) == text


def test_a_part_read_keeps_its_keys_nulls_and_order():
    stored = {"opt": None, "req": 3, "inner": {"b": 1, "a": None}, "zz": [1]}
    assert json.dumps(Outer.from_dict(stored).to_dict()) == json.dumps(stored)  # no ALWAYS key added


def test_a_field_assigned_after_reading_is_written_after_the_stored_keys():
    part = Outer.from_dict({"req": 3, "n": 1})
    part.opt = "set"
    assert list(part.to_dict()) == ["req", "n", "opt"]
    assert part.was_stored("n") and not part.was_stored("opt")
    assert not Outer(n=1).was_stored("n")


def test_records_use_no_pydantic_internals():
    package = Path(__file__).resolve().parents[3] / "tebench"
    assert [p.name for p in package.rglob("*.py") if "__pydantic" in p.read_text(encoding="utf-8")] == []


class Line(Row):
    x: Int | None = field(None, "x")
    y: Int | None = field(None, "y")


class Table(Part):
    rows: list[Line] = field(list, "rows")


def test_a_row_follows_its_parent_s_stored_object():
    stored = {"rows": [{"y": 1, "x": None}, {"x": 2}]}
    table = Table.from_dict(stored)
    assert json.dumps(table.to_dict()) == json.dumps(stored)
    assert not Line.from_dict({"x": 1}).was_stored("x")  # a row keeps nothing of its own
