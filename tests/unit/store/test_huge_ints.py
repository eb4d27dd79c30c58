"""Integers past Python's 4,300-digit limit, in a results file or a matrix: a message naming the
file, line and field, the rest of the input read, never a ValueError from int()."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import FIXTURES
from tebench import cli
from tebench.escape import short_repr
from tebench.store import reader

CPU = FIXTURES / "cpu-smoke.jsonl"
HUGE = "9" * (sys.get_int_max_str_digits() + 10)


def _with_huge(tmp_path, line: int, set_field) -> str:
    """The CPU fixture with a huge integer put into one record (``set_field`` places the marker)."""
    lines = CPU.read_text().splitlines()
    record = json.loads(lines[line])
    set_field(record)
    lines[line] = json.dumps(record).replace("12345678987654321", HUGE)
    path = tmp_path / "huge.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


MARK = 12345678987654321


@pytest.mark.parametrize("where,set_field", [
    ("[round]", lambda r: r.__setitem__("round", MARK)),                             # a declared field
    ("[timing", lambda r: r.setdefault("timing", {}).__setitem__("steps", MARK)),  # a part's field
    ("[my_notes.deep[1]]", lambda r: r.__setitem__("my_notes", {"deep": [0, MARK]})),  # free-form, kept as extra
])
def test_a_huge_integer_in_a_case_skips_that_line_naming_the_field(tmp_path, where, set_field):
    path = _with_huge(tmp_path, 1, set_field)
    with pytest.warns(UserWarning) as caught:
        run = reader.read(path)
    message = str(caught[0].message)
    assert f"{path}:2: {where}" in message and "digits" in message
    assert len(run.cases) == len(CPU.read_text().splitlines()) - 2  # only that line is left out


def test_a_huge_integer_in_the_header_refuses_the_file_naming_line_and_field(tmp_path, capsys):
    path = _with_huge(tmp_path, 0, lambda r: r.__setitem__("rounds", MARK))
    assert cli.main(["compare", path, str(CPU)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: [rounds]" in err and "no header record" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["report", "{p}", "--out", "{t}/r"], ["compare", "{p}", str(CPU)], ["merge", "{p}", "--out", "{t}/m", "--no-report"],
    ["history", "add", "{p}", "--db", "{t}/h.db"],
])
def test_every_reader_goes_on_past_a_huge_integer(tmp_path, capsys, argv):
    path = _with_huge(tmp_path, 2, lambda r: r.__setitem__("round", MARK))
    assert cli.main([a.format(p=path, t=tmp_path) for a in argv]) == 0
    err = capsys.readouterr().err
    assert "huge.jsonl:3: [round]" in err and "Traceback" not in err


@pytest.mark.parametrize("literal,fragment", [
    (HUGE, "line 3: an integer of"),                   # decimal: tomllib's int() raises
    ("0x" + "f" * 5000, "<an integer of 20000 bits>"),  # hexadecimal: parsed, but has no decimal repr
])
def test_a_huge_integer_in_a_matrix_is_refused_naming_line_or_key(tmp_path, capsys, literal, fragment):
    path = tmp_path / "m.toml"
    path.write_text(f'extends = "smoke"\n[settings]\nsteps = {literal}\n')
    assert cli.main(["list", str(path)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and str(path) in err and "Traceback" not in err


def test_short_repr_is_safe_for_any_integer():
    assert short_repr(int("f" * 5000, 16)) == "<an integer of 20000 bits>"
    assert short_repr("x" * 100, 10) == "'xxxxxx..."
