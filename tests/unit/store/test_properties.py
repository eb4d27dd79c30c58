"""Property-based tests: any input to the matrix loader or the results reader
gives a result or a clean error (MatrixError / SchemaError: exit 2), never a
traceback. Inputs are arbitrary text and bytes, and valid documents with one
value replaced by anything JSON or TOML can hold.
"""

from __future__ import annotations

import copy
import json
import math
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from tebench.schema.records import Case
from tebench import cli
from tebench.bounded import InputError
from tebench.plan import matrix
from tebench.store import reader as results
from tebench.schema.version import SchemaError
from tebench.report import load as report_load

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

VALID = {
    "name": "prop",
    "settings": {"steps": 4, "warmup": 1, "lr": 1e-3, "timeout_s": 60.0},
    "axes": {"modes": ["PT-FP32", "TE-FP8"], "graphs": [False], "parallel": ["single"]},
    "fp8": {"recipes": ["delayed"], "formats": ["HYBRID"], "amax_history_len": [16], "calibration_steps": [0]},
    "sizes": {"gpt": {"a": {"vocab": 32, "d_model": 64, "heads": 4, "layers": 1, "ffn": 128, "seq": 16,
                            "batch": 4}},
              "module": {"m": {"module": "linear", "hidden": 32, "tokens": 64}}},
    "exclude": [{"mode": "TE-FP8", "size": "m", "reason": "why not"}],
}

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["PT-FP32", "TE-FP8", "delayed", "gpt", "a/b", "$\\foo{$", "\x07", "", "all"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                      max_leaves=8)


def paths(doc, prefix=()):
    """Every path (tuple of keys/indices) into a nested document."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


def replaced(doc, path, value):
    out = copy.deepcopy(doc)
    if not path:
        return value
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


@FAST
@given(data=st.data())
def test_matrix_with_one_value_replaced_loads_or_is_refused(data):
    all_paths = list(paths(VALID))
    path = data.draw(st.sampled_from(all_paths))
    if data.draw(st.booleans()):  # or add a new key next to it
        path = path + (data.draw(st.sampled_from(["steps", "d_model", "modes", "vocab", "x", "size"])),)
        if not isinstance(replaced_parent(VALID, path), dict):
            path = path[:-1]
    doc = replaced(VALID, path, data.draw(values))
    mat = matrix.Matrix(name="prop", source="prop.toml", data=doc, text_sha256="", origins={"": "prop.toml"})
    try:
        cases = list(matrix.iter_cases(mat))
    except matrix.MatrixError as exc:
        assert str(exc).startswith("prop.toml: [")
        return
    for case in cases:  # what was accepted is sane
        assert "/" not in case.size and case.settings.steps >= 1 and math.isfinite(case.settings.timeout_s)
        assert math.isfinite(case.settings.lr) and case.settings.lr > 0
        assert Case.from_dict(case.to_dict()) == case


def replaced_parent(doc, path):
    target = doc
    for key in path[:-1]:
        try:
            target = target[key]
        except (KeyError, IndexError, TypeError):
            return None
    return target


@FAST
@given(text=st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))))
def test_any_matrix_text_loads_or_is_refused(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("m") / "m.toml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        matrix.load(path)
    except matrix.MatrixError as exc:
        assert str(exc).startswith(str(path))


CPU_LINES = FIXTURES.joinpath("cpu-smoke.jsonl").read_text().splitlines()
HEADER, CASE = json.loads(CPU_LINES[0]), json.loads(CPU_LINES[1])


def read_quietly(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return report_load.load(path)


@FAST
@given(data=st.data())
def test_results_with_one_value_replaced_read_or_are_refused(data, tmp_path_factory):
    which = data.draw(st.sampled_from(["header", "case"]))
    doc = HEADER if which == "header" else CASE
    path_ = data.draw(st.sampled_from([p for p in paths(doc) if len(p) <= 4]))
    value = data.draw(values)
    mutated = replaced(doc, path_, value)
    lines = [mutated, CASE] if which == "header" else [HEADER, mutated]
    file = tmp_path_factory.mktemp("r") / "results.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in lines))
    try:
        src = read_quietly(file)
    except SchemaError as exc:
        assert str(file) in str(exc)
        return
    # What the reader accepted, the readers downstream can use.
    assert all(isinstance(r.case_id, str) and isinstance(r.case, Case) for r in src.records)
    code = cli.main(["compare", str(file), str(file), "--format", "json",
                     "--out", str(file.with_suffix(".json"))])
    assert code in (0, 1, 2)
    if code != 2:
        json.loads(file.with_suffix(".json").read_text(), parse_constant=_no_nan)
    assert cli.main(["merge", str(file), "--out", str(file.parent / "merged"), "--no-report"]) == 0


def _no_nan(name: str):
    raise AssertionError(f"compare --format json wrote {name}: not strict JSON")


@FAST
@given(lines=st.lists(st.one_of(st.binary(max_size=80), st.sampled_from(CPU_LINES[:3]).map(str.encode),
                                values.map(lambda v: json.dumps(v).encode())), max_size=6))
def test_any_bytes_read_or_are_refused(lines, tmp_path_factory):
    file = tmp_path_factory.mktemp("b") / "results.jsonl"
    file.write_bytes(b"\n".join(lines))
    try:
        run = results.read(file) if True else None
    except (SchemaError, InputError) as exc:  # InputError: bytes that begin as gzip but are no gzip stream
        assert str(file) in str(exc)
        return
    except UserWarning:  # pragma: no cover - warnings are not errors here
        pytest.fail("warning raised as error")
    assert run.headers


@pytest.fixture(autouse=True)
def _warnings_are_not_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
