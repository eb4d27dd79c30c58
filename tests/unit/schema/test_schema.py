"""The results schema is declared once: validation, reading, writing and rendering follow from it.

A damaged value anywhere in a record is refused with its field path (never a
traceback in a reader); a new measured field is one line on its part in
``tebench/schema/records.py``, and the worker, the runner, the writer, the reader
and the report all carry it with no other change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
import typing

import pytest

from conftest import FIXTURES, ROOT, STUB_CLI, read_jsonl
from tebench.schema import records
from tebench.schema.part import OneOf
from tebench.schema.text import check_text
from tebench.schema.part import PartBase as _Part
from tebench.schema.records import CaseResult, Measurements, RunHeader
from tebench.schema.version import RecordError

CPU = FIXTURES / "cpu-smoke.jsonl"
H200 = FIXTURES / "h200-crossover.jsonl"


def _parts() -> list[type]:
    return [c for c in vars(records).values() if isinstance(c, type) and issubclass(c, _Part) and c is not _Part]


def _declared(part) -> list[tuple[str, object, dict]]:
    """``(stored key, type, {required, choices})`` of each declared field of a part."""
    out = []
    for name, f in part.model_fields.items():
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        choices = next((m.choices for m in f.metadata if isinstance(m, OneOf)), None)
        out.append((f.alias or name, f.annotation, {"required": extra.get("required"), "choices": choices}))
    return out


def _plain(hint):
    """``X`` of ``X | None`` and of ``Annotated[X, ...]``; ``number`` for an int-or-float; ``hint`` otherwise."""
    if typing.get_origin(hint) is typing.Annotated:
        return _plain(typing.get_args(hint)[0])
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [_plain(a) for a in typing.get_args(hint) if a is not type(None)]
        return "number" if set(options) == {int, float} else options[0]
    return hint


def _wrong(hint) -> object:
    """A value of another kind than ``hint`` declares."""
    plain = _plain(hint)
    origin = typing.get_origin(plain) or plain
    return {str: 3, int: "3", float: "3", "number": "3", bool: "yes", list: {"a": 1}, dict: [1]}.get(
        origin, "not an object")


def _valid(hint, meta) -> object:
    """A value ``hint`` (within ``meta``'s choices) accepts: the other required fields of a probe."""
    if meta.get("choices"):
        return meta["choices"][0]
    plain = _plain(hint)
    origin = typing.get_origin(plain) or plain
    if origin is list:
        return [_valid(typing.get_args(plain)[0], {})] if typing.get_args(plain) else []
    if isinstance(plain, type) and issubclass(plain, _Part):  # a part: with its own required fields
        return {n: _valid(h, m) for n, h, m in _declared(plain) if m.get("required")}
    return {str: "x", int: 1, float: 1.0, "number": 1.0, bool: True, dict: {}}.get(origin, {})


@pytest.mark.parametrize("part", _parts(), ids=lambda c: c.__name__)
def test_every_declared_field_refuses_a_value_of_another_kind(part):
    fields = _declared(part)
    required = {n: _valid(h, m) for n, h, m in fields if m.get("required")}
    if part is CaseResult:
        required.update(case_id="gpt/tiny/PT-FP32", case=read_jsonl(CPU)[1]["case"])
    part.check(required)  # the probe itself is valid
    for name, hint, _ in fields:
        if hint is typing.Any:
            continue
        with pytest.raises(RecordError) as err:
            part.check({**required, name: _wrong(hint)})
        assert err.value.key == name, (part.__name__, name, str(err.value))


def test_errors_name_the_path_at_any_depth():
    d = next(d for d in read_jsonl(ROOT / "reports" / "h200-nightly" / "results.jsonl.gz")
             if (d.get("parity") or {}).get("validation"))
    d["parity"]["validation"]["value"] = "high"
    with pytest.raises(RecordError, match=r"\[parity.validation.value\] = 'high': must be a number or null"):
        CaseResult.check(d)
    d = read_jsonl(CPU)[0]
    d["env"]["gpus"] = [{"name": "H200"}]
    with pytest.raises(RecordError, match=r"\[env.gpus\[0\].index\] = None: missing"):
        RunHeader.check(d)  # the environment is a part of the header, checked at every depth
    d = read_jsonl(CPU)[0]
    d["matrix"]["name"] = None
    with pytest.raises(RecordError, match=r"\[matrix.name\] = None: missing"):
        RunHeader.check(d)


def test_a_validation_metric_must_name_a_number():
    d = read_jsonl(CPU)[1]
    d["validation"]["greedy_accuracy"] = "all"
    with pytest.raises(RecordError, match=r"\[validation.greedy_accuracy\]"):
        CaseResult.check(d)
    d["validation"] = {"metric": "user_score", "user_score": [1]}  # a plugin's own metric
    with pytest.raises(RecordError, match=r"\[validation.user_score\] = \[1\]"):
        CaseResult.check(d)


def test_text_that_is_not_unicode_is_refused_anywhere():
    d = read_jsonl(CPU)[1]
    d["reason"] = "bad \ud800 text"
    with pytest.raises(RecordError, match=r"\[reason\].*unpaired surrogate"):
        check_text(d)
    d = read_jsonl(CPU)[0]
    d["env"]["cpu"] = "\udfff"
    with pytest.raises(RecordError, match=r"\[env.cpu\]"):
        check_text(d)


def test_every_stored_record_passes_its_declarations():
    for path in sorted(ROOT.glob("reports/*/results.jsonl*")) + sorted(FIXTURES.glob("*.jsonl")):
        for d in read_jsonl(path):
            (CaseResult if d["type"] == "case" else RunHeader).check(d)


def test_measured_fields_are_the_workers_declaration():
    """CaseResult extends Measurements: the worker's parts are the record's, declared once, and build_record
    copies every one of them (there is no second list of keys to forget one in)."""
    assert issubclass(CaseResult, Measurements)
    assert set(Measurements.measured()) == set(Measurements.model_fields)
    assert {"timing", "loss", "memory", "phases", "updates", "fp8_state"} <= set(Measurements.measured())


NEW_FIELD = '    compile_s: Num | None = _phase("Compilation.", "compile", "compile s", "#000000")\n'


def test_a_new_field_is_declared_in_one_place_and_is_stored_read_validated_and_rendered(tmp_path):
    """Add one line to Phases in a copy of the package; the stub worker (built from the same types)
    emits it, the runner records it, the reader types and validates it, the report shows it."""
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "tebench", copy / "tebench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "templates", copy / "tebench" / "templates")
    shutil.copytree(ROOT / "benchmarks" / "matrices", copy / "tebench" / "presets")
    schema = copy / "tebench" / "schema" / "records.py"
    text = schema.read_text()
    anchor = '    validate_s: Num | None = _phase("Held-out validation.", "validate", "validate s", "#17becf")\n'
    assert anchor in text
    schema.write_text(text.replace(anchor, anchor + NEW_FIELD))  # the one place

    matrix = tmp_path / "tiny.toml"
    matrix.write_text(textwrap.dedent("""
        name = "one-place"
        [settings]
        steps = 4
        warmup = 1
        [axes]
        modes = ["PT-FP32", "PT-AMP"]
        [sizes.gpt.a]
        vocab = 32
        d_model = 32
        heads = 2
        layers = 1
        ffn = 64
        seq = 8
        batch = 2
    """))
    stub = tmp_path / "stub-python"
    from conftest import STUB_WORKER

    stub.write_text(f"#!{sys.executable}\n" + textwrap.dedent(STUB_WORKER))
    stub.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), str(ROOT / "tests")]), "STUB_PHASES": "0.25"}
    out, rep = tmp_path / "out", tmp_path / "report"
    for args in (["run", str(matrix), "--out", str(out), "--no-report", "--quiet"],
                 ["report", str(out), "--out", str(rep)]):
        proc = subprocess.run([sys.executable, "-c", STUB_CLI, str(stub), *args], env=env, capture_output=True,
                              text=True, timeout=300, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr

    stored = [d for d in read_jsonl(out / "results.jsonl") if d["type"] == "case"]
    assert stored and all(d["phases"]["compile_s"] == 0.25 for d in stored)  # stored
    assert "compile s" in (rep / "report.md").read_text()  # rendered: a column of the cost table

    damaged = tmp_path / "damaged.jsonl"
    lines = (out / "results.jsonl").read_text().splitlines()
    bad = json.loads(lines[1])
    bad["phases"]["compile_s"] = "slow"
    damaged.write_text("\n".join([lines[0], json.dumps(bad), *lines[2:]]) + "\n")
    check = textwrap.dedent(f"""
        import warnings
        from tebench.analysis import judged_run
        run = judged_run.read({str(out)!r})
        assert [r.phases.compile_s for r in run.cases] == [0.25, 0.25], run.cases  # read, typed
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            run = judged_run.read({str(damaged)!r})
        assert len(run.cases) == 1, run.cases
        assert "damaged.jsonl:2: [phases.compile_s] = 'slow': must be a number or null" in str(w[0].message)
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)  # not the checkout: the copy is the tebench to import
    assert proc.stdout.strip() == "ok", proc.stderr

    # This tebench, which does not know the field, keeps it unchanged (a newer writer's key rides along).
    r = CaseResult.from_dict(stored[0])
    assert r.phases.extra == {"compile_s": 0.25} and r.to_dict() == stored[0]
