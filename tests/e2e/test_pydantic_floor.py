"""The oldest pydantic that pyproject.toml allows writes stored results files back as the newest does.

A fresh venv (no --system-site-packages) gets exactly the lower end of the ``pydantic`` requirement
(with the pydantic-core it pins), numpy, and this clone with ``--no-deps``; it writes back every
record of stored results files, and this process (with what bootstrap installed: the newest release,
the upper end) does the same. Both must agree byte for byte, and every header must write back its
stored line. The venv is built once (about 10 s from a local package mirror). Where pip cannot
reach a package index the test skips, saying so; with ``CI=true`` it fails instead.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from helpers import fresh_venv
from helpers.fresh_venv import check_ok

STORED = [ROOT / "reports" / "cpu-smoke" / "results.jsonl",  # non-ASCII text ('±'), which pydantic 2.7.0 misreads
          ROOT / "reports" / "h200-tutorial-distill" / "results.jsonl.gz"]

WRITE_BACK = """
import json, pathlib, sys
from tebench import bounded
from tebench.store.reader import loads, parse_record
for name in sys.argv[1:]:
    for _, raw in bounded.iter_lines(pathlib.Path(name)):
        if raw and raw.strip():
            record = parse_record(loads(raw), line=raw)
            print(json.dumps({"line": raw.decode(), "out": record.to_dict()}, allow_nan=True))
"""
"""Each record of each file: its stored line and what it writes back (one JSON line per record)."""


def floor() -> str:
    """The lower end of pyproject.toml's pydantic requirement (``pydantic>=X,<3``)."""
    found = re.findall(r'"pydantic>=([0-9.]+),<3"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert len(found) == 1, found
    return found[0]


def test_this_pydantic_is_in_the_pinned_range():
    import pydantic

    low = tuple(int(p) for p in floor().split("."))
    assert low >= (2, 7, 4)  # 2.7.0's pydantic-core (2.18.1) reads a stored line's '±' as 'Â±'
    assert low <= tuple(int(p) for p in pydantic.VERSION.split(".")[:3]) < (3,)


@pytest.fixture(scope="module")
def floor_box(tmp_path_factory) -> fresh_venv.Box:
    b = fresh_venv.make(tmp_path_factory.mktemp("pydantic-floor"))
    assert not b.imports("pydantic"), "the fresh venv sees another environment's packages"
    fresh_venv.reach_index(b, f"pydantic=={floor()}")
    check_ok(b.pip(f"pydantic=={floor()}", "numpy"), f"pip install pydantic=={floor()} numpy")
    check_ok(b.pip("--no-deps", "-e", str(ROOT)), "pip install --no-deps -e <clone>")
    return b


def test_the_oldest_pydantic_writes_stored_records_back_as_the_newest(floor_box):
    b = floor_box
    version = b.run(b.python, "-c", "import pydantic; print(pydantic.VERSION)")
    assert version.stdout.strip() == floor(), version.stderr
    old = b.run(b.python, "-c", WRITE_BACK, *STORED)
    check_ok(old, "write-back with the oldest pydantic")
    new = subprocess.run([sys.executable, "-c", WRITE_BACK, *map(str, STORED)], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    check_ok(new, "write-back with this process's pydantic")
    assert old.stdout.splitlines() == new.stdout.splitlines()
    rows = [json.loads(line) for line in new.stdout.splitlines()]
    headers = [r for r in rows if r["out"].get("type") == "header"]
    assert len(rows) == 27 and len(headers) == 2
    for r in headers:
        assert json.loads(r["line"]) == r["out"] and list(json.loads(r["line"])) == list(r["out"])
