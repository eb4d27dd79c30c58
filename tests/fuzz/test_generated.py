"""Generated fuzzing of every input surface, from the declarations the readers check against.

- results records: each declared field of a case or header record (schema/records.py, at any
  depth) damaged with a value around its limits, of the wrong type, a huge integer, non-UTF-8
  bytes or a lone surrogate; read by the reader, the typed reader, compare and merge;
- matrices: each ``Settings`` knob given values around its declared limits and of other types;
- history databases: case rows with any SQLite value in any column;
- command lines: every option of ``run``, ``list`` and ``ab`` with values around what ``--help``
  says, stopped at the hardware probe (input accepted) so nothing runs.

The property is the product's promise: a result or a clean refusal (exit 0 or 2; 1 only for a
verdict), never a traceback or the guard's exit 70, and no readable record lost.

Profiles (``TEBENCH_FUZZ_PROFILE``): ``ci`` (the default: derandomized, bounded, no example
database, well under a minute) and ``nightly`` (random, ten times the examples, found examples
kept in ``.hypothesis/`` so a failure is tried first the next night).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sqlite3
import sys
import typing
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from tebench import cli
from tebench.cli.history import report as history_report
from tebench.plan import environment as detect
from tebench.plan import matrix
from tebench.schema.part import MAX_EXACT, PartBase
from tebench.schema.records import CaseResult, RunHeader
from tebench.schema.version import SchemaError
from tebench.analysis import judged_run
from tebench.run import merge
from tebench.store import history
from tebench.store import reader as results

CPU = FIXTURES / "cpu-smoke.jsonl"
LINES = CPU.read_text().splitlines()
RECORDS = [json.loads(line) for line in LINES]

_PROFILE = os.environ.get("TEBENCH_FUZZ_PROFILE", "ci")
_COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck))


def profile(ci_examples: int) -> settings:
    """The settings of one property under the chosen profile (see the module docstring)."""
    if _PROFILE == "nightly":
        return settings(max_examples=ci_examples * 10, **_COMMON)
    return settings(max_examples=ci_examples, derandomize=True, database=None, **_COMMON)


# --- the declarations --------------------------------------------------------------------------------

def _part_of(hint: Any) -> type | None:
    for option in (typing.get_args(hint) or (hint,)):
        if isinstance(option, type) and issubclass(option, PartBase):
            return option
        for inner in typing.get_args(option):  # list[Part]
            if isinstance(inner, type) and issubclass(inner, PartBase):
                return inner
    return None


Any = typing.Any


def _limits(f: Any) -> dict:
    """A field's limits as the damage strategies take them: min, max (the field's own, not the 64-bit range)."""
    meta: dict = {}
    for m in f.metadata:
        if getattr(m, "ge", None) is not None and abs(m.ge) < MAX_EXACT:
            meta["min"] = m.ge
        if getattr(m, "le", None) is not None and abs(m.le) < MAX_EXACT:
            meta["max"] = m.le
    return meta


def declared_paths(cls: type, prefix: tuple = (), depth: int = 0) -> list[tuple[tuple, Any, dict]]:
    """Every declared field path of a record class, nested parts included: (path, hint, metadata)."""
    out = []
    for name, f in cls.model_fields.items():
        path = prefix + (f.alias or name,)
        out.append((path, f.annotation, _limits(f)))
        part = _part_of(f.annotation)
        if part is not None and depth < 4:
            out.extend(declared_paths(part, path, depth + 1))
    return out


CASE_PATHS = declared_paths(CaseResult)
HEADER_PATHS = declared_paths(RunHeader)


def _present(record: dict, path: tuple) -> list[list]:
    """The concrete locations (keys and list indices) of a declared path in one record."""
    found: list[list] = [[]]
    for key in path:
        nxt = []
        for loc in found:
            node = _get(record, loc)
            if isinstance(node, dict) and key in node:
                nxt.append(loc + [key])
            elif isinstance(node, list):
                nxt.extend(loc + [i, key] for i, item in enumerate(node[:3]) if isinstance(item, dict) and key in item)
        found = nxt
    return found


def _get(node: Any, loc: list) -> Any:
    for key in loc:
        node = node[key]
    return node


MARK = "\u2063MARK\u2063"  # replaced in the JSON text by raw damage (huge digits, bad bytes)


def damage_values(meta: dict) -> st.SearchStrategy:
    """Values around a field's declared limits, of other types, and beyond what JSON decoders take."""
    around = []
    for bound in (meta.get("min"), meta.get("max")):
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            around += [bound - 1, bound, bound + 1, bound * 2 + 1, -bound]
    return st.one_of(
        st.sampled_from(around or [0]),
        st.sampled_from([None, True, "", "²", "\u202e", [], {}, [[[]]], {"x": {"y": None}}, -1, 0, 2**63, 2**64,
                         1e308, -0.0, "NaN"]),
        # The float's and the integer's edges, and lists of them: a field's own value, and what a summary
        # derived from it (mean, sd, rates) computes (the fifth corpus: 1e308-ms samples overflowed the mean).
        st.sampled_from([sys.float_info.max, -sys.float_info.max, 5e-324, 1e300, 1e306, 2**53 + 1, -(2**53 + 1),
                         2**63 - 1, [sys.float_info.max] * 3, [1.0, 1e300, 2.0], [1e-300, 1e300], [5e-324] * 4,
                         [2**53 + 1, 1]]),
        st.sampled_from([("raw", b"9" * 5000), ("raw", b"-" + b"1" * 4400), ("raw", b'"\\ud800"'),
                         ("raw", b'"\xff\xfe"'), ("raw", b"1e999999"), ("raw", b"NaN"), ("raw", b"[" * 2000)]),
        st.text(max_size=20), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    )


def _damaged_line(record: dict, loc: list, value: Any) -> bytes:
    rec = json.loads(json.dumps(record))
    parent = _get(rec, loc[:-1])
    if isinstance(value, tuple) and value and value[0] == "raw":
        parent[loc[-1]] = MARK
        return json.dumps(rec).encode().replace(json.dumps(MARK).encode(), value[1])
    parent[loc[-1]] = value
    return json.dumps(rec, allow_nan=True).encode()


@st.composite
def damaged_file(draw) -> tuple[int, str, bytes]:
    """(index of the damaged line, the damaged field, the whole file's bytes) with one declared field damaged."""
    index = draw(st.integers(min_value=0, max_value=len(RECORDS) - 1))
    record = RECORDS[index]
    paths = HEADER_PATHS if record["type"] == "header" else CASE_PATHS
    choices = [(loc, meta) for path, _, meta in paths for loc in _present(record, path)]
    loc, meta = draw(st.sampled_from(choices))
    line = _damaged_line(record, loc, draw(damage_values(meta)))
    raw = [line.encode() for line in LINES]
    raw[index] = line
    return index, str(loc[0]), b"\n".join(raw) + b"\n"


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


@profile(100)
@given(damaged_file())
def test_a_damaged_field_at_any_depth_is_read_or_refused_and_loses_nothing_else(tmp_path_factory, case):
    index, field, data = case
    path = tmp_path_factory.mktemp("d") / "results.jsonl"
    path.write_bytes(data)
    try:
        run = _quiet(results.read, path)
    except SchemaError as exc:
        # A damaged header refuses the file, and so does a schema version (a newer one must).
        assert index == 0 or field in ("schema", "schema_version"), f"refused for one case line: {exc}"
        return
    # Every other case line is still there (the damaged one may be kept or skipped).
    assert len(run.cases) >= len(RECORDS) - 2
    typed = _quiet(judged_run.read, path)
    assert len(typed.cases) >= len(RECORDS) - 2
    from tebench.analysis.compare import compare

    result = _quiet(compare, str(path), str(CPU))
    assert result.exit_code in (0, 1, 2)
    merged = _quiet(merge.join, [str(path)], tmp_path_factory.mktemp("m"))
    assert len(merged.records) == len(typed.cases)


@profile(12)
@given(damaged_file(), st.sampled_from(["report", "compare", "merge", "history"]))
def test_the_commands_on_a_damaged_file_exit_0_or_2_without_a_traceback(tmp_path_factory, capsys, case, command):
    _, _, data = case
    tmp = tmp_path_factory.mktemp("c")
    path = tmp / "results.jsonl"
    path.write_bytes(data)
    argv = {"report": ["report", str(path), "--out", str(tmp / "r")],
            "compare": ["compare", str(path), str(CPU)],
            "merge": ["merge", str(path), "--out", str(tmp / "m"), "--no-report"],
            "history": ["history", "add", str(path), "--db", str(tmp / "h.db")]}[command]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code in ((0, 1, 2) if command == "compare" else (0, 2)), err
    assert "Traceback" not in err and "internal error" not in err


# --- matrices from the knob declarations ---------------------------------------------------------------

SETTINGS = [(f.name, dict(f.metadata)) for f in dataclasses.fields(matrix.Settings)]


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value == math.inf else "-inf" if value == -math.inf
                                                 else repr(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


@st.composite
def matrix_text(draw) -> str:
    name, meta = draw(st.sampled_from(SETTINGS))
    around: list[Any] = []
    for bound in (meta.get("min"), meta.get("max")):
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            around += [bound - 1, bound, bound + 1, -bound, bound * 10]
    around += list(meta.get("choices") or [])
    value = draw(st.one_of(st.sampled_from(around or [0]), st.integers(), st.floats(), st.text(max_size=8),
                           st.booleans(), st.lists(st.integers(), max_size=2),
                           st.sampled_from(["0x" + "f" * 4000, "9" * 4400, "1_000", "0o17", "inf"])))
    text = value if isinstance(value, str) and value[:1].isdigit() else _toml_value(value)
    return f'extends = "smoke"\n[settings]\n{name} = {text}\n'


@profile(100)
@given(matrix_text())
def test_a_matrix_from_the_knob_declarations_loads_or_is_refused_naming_the_key(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("mx") / "m.toml"
    path.write_text(text)
    try:
        loaded = matrix.load(str(path))
        cases = list(matrix.iter_cases(loaded))
    except matrix.MatrixError as exc:
        key = text.split("\n")[2].split(" = ")[0]
        assert str(path) in str(exc) and (key in str(exc) or "[file]" in str(exc)), str(exc)
        return
    assert cases


# --- history rows ----------------------------------------------------------------------------------------

sql_values = st.one_of(st.none(), st.integers(min_value=-2**63, max_value=2**63 - 1), st.floats(),
                       st.text(max_size=10), st.binary(max_size=8))
COLUMNS = ("device", "status", "median_ms", "tokens_per_s", "memory_bytes", "final_loss", "parity", "round",
           "case_id")


@pytest.fixture(scope="module")
def stored_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("h") / "h.db"
    history.add(path, judged_run.read(CPU))
    return path.read_bytes()


@profile(16)
@given(st.lists(st.tuples(st.integers(min_value=1, max_value=11), st.sampled_from(COLUMNS), sql_values),
                min_size=1, max_size=4),
       st.sampled_from([None, "", 0, "not a time"]), st.sampled_from([None, "", 7]))
def test_history_rows_of_any_value_are_charted_or_skipped_by_rowid(tmp_path_factory, stored_db, edits, created,
                                                                   device):
    tmp = tmp_path_factory.mktemp("hr")
    db = tmp / "h.db"
    db.write_bytes(stored_db)
    with sqlite3.connect(db) as conn:
        for rowid, column, value in edits:
            with_constraint = column in ("case_id", "round") and value is None
            if not with_constraint:
                conn.execute(f"UPDATE cases SET {column} = ? WHERE rowid = ?", (value, rowid))
        conn.execute("UPDATE runs SET created = ?, device = ?", (created, device))
    try:
        df = _quiet(history.frame, db)
    except history.HistoryError:
        return
    assert len(df) >= 11 - len(edits)
    _quiet(history_report, db, tmp / "r", 10, {}, 3)


# --- command lines ---------------------------------------------------------------------------------------

class ReachedProbe(SystemExit):
    """The input was accepted: the command went on to probe the hardware (nothing runs here). A SystemExit:
    the guard turns any other BaseException into exit 70, and lets SystemExit through."""


def _options(command: str) -> list[argparse.Action]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices[command]._actions if a.option_strings and a.nargs != 0
            and a.dest not in ("help", "out", "compile_cache")]


ODD_VALUES = ["", " ", "0", "-1", "1", "²", "٣", "1e999", "nan", "inf", "9" * 5000, "0x10", "1/0", "0/1", "3/2",
              "a,b", "0,0", "\udcff", "x" * 300, "--", "=", "*", "gpt/*/PT-*", "auto", "smoke", "2026"]


@profile(80)
@given(st.sampled_from(["run", "list", "ab"]), st.data())
def test_any_option_value_is_accepted_or_refused_with_exit_2(tmp_path_factory, capsys, monkeypatch, command, data):
    action = data.draw(st.sampled_from(_options(command)))
    value = data.draw(st.one_of(st.sampled_from(ODD_VALUES), st.sampled_from([str(c) for c in action.choices or []]
                                                                            or ["0"])))

    def probe(*args, **kwargs):
        raise ReachedProbe

    monkeypatch.setattr(detect, "_run_probe", probe)
    monkeypatch.setattr(detect, "probe", probe)
    tmp = tmp_path_factory.mktemp("cl")
    argv = [command, "--preset", "smoke", action.option_strings[-1], value]
    if command in ("run", "ab"):
        argv += ["--out", str(tmp / "o")]
    if action.dest == "preset":
        argv = [command, action.option_strings[-1], value] + argv[3:]
    try:
        code = cli.main(argv)
    except ReachedProbe:
        code = 0
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    err = capsys.readouterr().err
    assert code in (0, 2), f"{argv}: {code}: {err}"
    assert "Traceback" not in err and "internal error" not in err


if sys.platform != "linux":  # the FIFO and /proc cases above assume Linux
    pytestmark = pytest.mark.skip(reason="Linux only")


# --- environment variables -------------------------------------------------------------------------------

ENVIRONMENTS = [
    {"PYTHONIOENCODING": "latin-1", "NO_COLOR": "1"},
    {"PYTHONIOENCODING": "ascii", "PYTHONWARNINGS": "error", "LC_ALL": "C"},
    {"LC_ALL": "C", "LANG": "", "TEBENCH_REPORT_PROCESSES": "²"},
    {"PYTHONWARNINGS": "error::UserWarning", "TEBENCH_REPORT_PROCESSES": "-1", "TEBENCH_CACHE_DIR": "/nonexistent/x"},
]


@pytest.mark.parametrize("extra", ENVIRONMENTS, ids=lambda e: ",".join(e))
def test_the_environment_changes_no_outcome(tmp_path, extra):
    import subprocess

    from conftest import ROOT

    lines = CPU.read_text().splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join([lines[0], "{cut short", *lines[1:]]) + "\n")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, **extra}
    proc = subprocess.run([sys.executable, "-m", "tebench", "compare", str(damaged), str(CPU)], capture_output=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr and b"skipped 1 unreadable line" in proc.stderr


# --- special files where a path is named, numbers where a variable holds one ----------------------------

PATH_COMMANDS = [
    ["report", "{p}", "--out", "{tmp}/r"],
    ["report", "{fixture}", "--out", "{p}"],
    ["compare", "{p}", "{fixture}"],
    ["compare", "{fixture}", "{fixture}", "--out", "{p}"],
    ["merge", "{p}", "--out", "{tmp}/m"],
    ["history", "add", "{p}", "--db", "{tmp}/h.db"],
    ["history", "add", "{fixture}", "--db", "{p}"],
    ["history", "report", "--db", "{p}", "--out", "{tmp}/hr"],
    ["run", "{p}", "--out", "{tmp}/o"],
    ["run", "--preset", "smoke", "--only", "gpt/tiny/PT-FP32", "--out", "{p}", "--no-report"],
    ["list", "{p}"],
]
"""Every command with each of its path arguments, ``{p}`` standing for the special file."""


def _special(kind: str, tmp) -> str:
    path = tmp / f"special-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "fifo.jsonl.gz":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "dangling-link":
        path.symlink_to(tmp / "nowhere")
    elif kind == "fifo-in-dir":
        path.mkdir()
        os.mkfifo(path / "results.jsonl")
    return str(path)


@profile(25)
@given(st.sampled_from(PATH_COMMANDS), st.sampled_from(["fifo", "fifo.jsonl.gz", "dir", "dangling-link", "fifo-in-dir"]))
def test_a_special_file_for_any_path_is_refused_or_read_and_never_blocks(tmp_path_factory, argv, kind):
    """A FIFO, a folder, a dangling link, or a folder whose results file is a FIFO, named as any path: the
    command answers (exit 0 or 2) within a minute, without a traceback, and never replaces the special file."""
    import subprocess
    tmp = tmp_path_factory.mktemp("special")
    p = _special(kind, tmp)
    args = [a.format(p=p, tmp=tmp, fixture=FIXTURES / "cpu-smoke.jsonl") for a in argv]
    env = {**os.environ, "TEBENCH_CACHE_DIR": str(tmp / "cache")}
    try:
        done = subprocess.run([sys.executable, "-m", "tebench", *args], capture_output=True, text=True, timeout=60,
                              env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tebench {' '.join(args)}: blocked on a {kind}")
    assert done.returncode in (0, 2), f"{args}: {done.returncode}: {done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    if kind.startswith("fifo") and "-in-dir" not in kind:
        import stat
        assert stat.S_ISFIFO(os.lstat(p).st_mode), f"{args}: the FIFO was replaced"


NUMERIC_VARIABLES = ["TEBENCH_PLUGIN_IMPORT_TIMEOUT", "TEBENCH_TEST_SLOWDOWN", "TEBENCH_TEST_STEP_SLEEP_MS",
                     "TEBENCH_REPORT_PROCESSES", "TEBENCH_PARENT_PID"]
"""The variables that hold a number (tebench/envvars.py)."""


@profile(20)
@given(st.sampled_from(NUMERIC_VARIABLES),
       st.sampled_from(["nan", "inf", "-inf", "1e300", "-1", "0", "²", "1,5", "", " 7 ", "9" * 400, "0x10", "1e-320"]))
def test_a_numeric_variable_of_any_value_is_used_or_refused_naming_it(tmp_path_factory, variable, value):
    """The variable is named in any refusal; nothing ends in a traceback or exit 70."""
    import subprocess
    tmp = tmp_path_factory.mktemp("var")
    env = {**os.environ, variable: value, "TEBENCH_CACHE_DIR": str(tmp / "cache")}
    done = subprocess.run([sys.executable, "-m", "tebench", "report", str(FIXTURES / "cpu-smoke.jsonl"), "--out",
                           str(tmp / "r")], capture_output=True, text=True, timeout=300, env=env,
                          stdin=subprocess.DEVNULL)
    assert done.returncode in (0, 2), f"{variable}={value!r}: {done.returncode}: {done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr
    if done.returncode == 2:
        assert variable in done.stderr, done.stderr[-2000:]

