"""The results file: schema versions, durability, damaged lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tebench.store import reader as results
from tebench.schema.version import SCHEMA, SCHEMA_VERSION, SchemaError
from tebench.schema import version as versions
from tebench.store.writer import Writer, dumps_strict, write_all
from tebench.store import writer as writer_module


def header() -> dict:
    return {"type": "header", "run_id": "r1", "env": {"device_type": "cpu"}}


def cid(size: str) -> str:
    """The id of :func:`case`'s case of that size."""
    return f"gpt/{size}/PT-FP32"


def case(size: str, status: str = "ok", **extra) -> dict:
    """A minimal well-formed case record: a PT-FP32 GPT case of that size name."""
    return {"type": "case", "case_id": cid(size), "round": 0, "status": status,
            "case": {"workload": "gpt", "size": size, "mode": "PT-FP32", "dims": {}}, **extra}


def test_roundtrip_and_latest(tmp_path):
    path = tmp_path / "results.jsonl"
    with Writer(path) as w:
        w.append(header())
        w.append(case("a", "failed"))
        w.append(case("a"))
    run = results.read(tmp_path)
    assert run.run_id == "r1" and len(run.cases) == 2
    assert run.latest()[(cid("a"), 0)].status == "ok"
    assert all(c.schema_version == SCHEMA_VERSION for c in run.cases)


def test_last_records_and_one_run_of_appended_runs(tmp_path):
    """One Run type: narrowed to the last record of each (case, round), lines kept beside them, or to one run."""
    path = tmp_path / "results.jsonl"
    with Writer(path) as w:
        w.append(header())
        w.append(case("a", "failed", run_id="r1"))
        w.append(case("b", run_id="r1"))
        w.append(case("a", run_id="r1"))
        w.append({**header(), "run_id": "r2"})
        w.append(case("b", "oom", run_id="r2"))
    with pytest.warns(UserWarning, match="replaced by another"):
        run = results.read(tmp_path)
    last = run.last_records()
    assert [(r.case_id, r.status, r.run_id) for r in last.cases] == [(cid("a"), "ok", "r1"), (cid("b"), "oom", "r2")]
    assert last.case_lines == [4, 6] and last.headers == run.headers and len(run.cases) == 4
    one = run.of_run("r1").last_records()
    assert [(r.case_id, r.status) for r in one.cases] == [(cid("a"), "ok"), (cid("b"), "ok")]
    assert one.run_id == "r1" and [h.run_id for h in one.headers] == ["r1"] and one.case_lines == [4, 3]
    assert run.of_run("r2").run_id == "r2" and [r.status for r in run.of_run("r2").cases] == ["oom"]


def _one_case_then(path, tail: str) -> Path:
    """A results file of a header and case "a", then the text ``tail``."""
    with Writer(path) as w:
        w.append(header())
        w.append(case("a"))
    with path.open("a") as fh:
        fh.write(tail)
    return path


def test_partial_last_line_is_skipped_and_appends_start_clean(tmp_path):
    path = _one_case_then(tmp_path / "results.jsonl", '{"schema": "tebench.results", "schema_ver')  # killed mid-write
    with pytest.warns(UserWarning, match="unreadable"):
        assert len(results.read(path).cases) == 1
    with Writer(path) as w:
        w.append(case("b"))
    with pytest.warns(UserWarning):
        run = results.read(path)
    assert [c.case_id for c in run.cases] == [cid("a"), cid("b")]


def test_a_byte_order_mark_starting_the_file_is_read_past_and_one_inside_it_is_named(tmp_path):
    path = _one_case_then(tmp_path / "results.jsonl", "")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # saved by an editor that adds the mark
    assert [c.case_id for c in results.read(path).cases] == [cid("a")]
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(path.read_bytes() + b"\xef\xbb\xbf"
                       + json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **case("b")}).encode() + b"\n")
    with pytest.warns(UserWarning, match=r"joined.jsonl:3: not JSON: it starts with a UTF-8 byte-order mark"):
        assert [c.case_id for c in results.read(joined).cases] == [cid("a")]


def test_json_nested_too_deep_is_named_as_such(tmp_path):
    path = _one_case_then(tmp_path / "results.jsonl", "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.warns(UserWarning, match=r"results.jsonl:3: JSON nested too deep to read"):
        assert [c.case_id for c in results.read(path).cases] == [cid("a")]


def test_newer_schema_is_refused_with_advice(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"schema": "tebench.results", "schema_version": 99, "type": "header"}) + "\n")
    with pytest.raises(SchemaError, match="schema v99.*upgrade tebench"):
        results.read(path)


def test_older_schema_is_refused_with_advice(tmp_path, monkeypatch):
    monkeypatch.setattr(versions, "MIN_READABLE_VERSION", 2)
    monkeypatch.setattr(versions, "SCHEMA_VERSION", 3)
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"schema": "tebench.results", "schema_version": 1, "type": "header"}) + "\n")
    with pytest.raises(SchemaError, match="older than the oldest"):
        results.read(path)


def test_foreign_file_is_refused(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(SchemaError, match="not a tebench results record"):
        results.read(path)
    with pytest.raises(FileNotFoundError, match="no results file"):
        results.read(tmp_path / "missing")


def test_a_page_whose_first_json_line_comes_late_is_named_from_its_first_line(tmp_path):
    """An HTML report given for its results: line 3 parses as JSON (a string), lines 1-2 do not; the error
    says none of them is a record, from line 1, not only that line 3 is not."""
    path = tmp_path / "index.html"
    path.write_text('<!doctype html>\n<html>\n"a string"\n')
    with pytest.raises(SchemaError, match=r"index.html:3: not a tebench results record \(a JSON str\); nor is any "
                                          r"of the 2 non-empty line\(s\) before it \(first: .*index.html:1: not JSON"):
        results.read(path)


def test_nan_is_written_as_null_with_a_note_and_read_back(tmp_path):
    path = tmp_path / "results.jsonl"
    losses = [2.0, float("nan"), float("inf")]
    with Writer(path) as w:
        w.append(header())
        w.append(case("a", "diverged", loss={"per_step": losses, "final": float("nan")}))
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    strict = [json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c} written")) for line in text.splitlines()]
    rec = strict[1]
    assert rec["loss"]["per_step"] == [2.0, None, None] and rec["loss"]["final"] is None
    assert {tuple(n["path"]): n["value"] for n in rec["non_finite"]} == {
        ("loss", "per_step", 1): "nan", ("loss", "per_step", 2): "inf", ("loss", "final"): "nan"}
    back = results.read(path).cases[0].loss
    assert back.per_step[0] == 2.0 and back.per_step[1] != back.per_step[1]
    assert back.per_step[2] == float("inf")


def test_older_files_with_bare_nan_still_read(tmp_path):
    path = tmp_path / "results.jsonl"
    rec = {"schema": SCHEMA, "schema_version": 1, **case("a", "diverged", loss={"per_step": [1.0, float("nan")]})}
    path.write_text(json.dumps({"schema": SCHEMA, "schema_version": 1, **header()}) + "\n"
                    + json.dumps(rec) + "\n")  # json.dumps writes bare NaN, as tebench once did
    loss = results.read(path).cases[0].loss.per_step
    assert loss[0] == 1.0 and loss[1] != loss[1]


def test_nan_timing_is_skipped_naming_file_line_and_key(tmp_path):
    path = tmp_path / "results.jsonl"
    with Writer(path) as w:
        w.append(header())
        w.append(case("a", timing={"samples_ms": [1.0, 2.0]}))
    lines = path.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["timing"]["samples_ms"][1] = float("nan")
    path.write_text("\n".join([lines[0], lines[1], json.dumps(bad)]) + "\n")
    with pytest.warns(UserWarning, match=r"results.jsonl:3: \[timing.samples_ms\[1\]\] = nan: must be a finite"):
        run = results.read(path)
    assert len(run.cases) == 1 and run.problems


@pytest.mark.parametrize("extra, message", [
    # Both were found by tests/unit/store/test_properties.py: compare raised a TypeError on them.
    ({"throughput": {"tokens_per_step": "0", "mfu_basis": "dense BF16"}},
     r"\[throughput.tokens_per_step\] = '0': must be a number or null, not a string"),
    ({"device": {"type": "cpu", "name": [None]}}, r"\[device.name\] = \[None\]: must be a string or null, not an array"),
    ({"memory": {"kind": 3, "peak_rss_bytes": 1}}, r"\[memory.kind\] = 3: must be a string or null, not an integer"),
    # Parity judges every curve it reads: a null loss (not a NaN the writer noted) or none at all.
    ({"loss": {"per_step": [2.0, None]}}, r"\[loss.per_step\[1\]\] = None: must be a number, not null"),
    ({"loss": {"per_step": None}}, r"\[loss.per_step\] = None: missing"),
])
def test_values_readers_compute_with_must_have_their_type(tmp_path, extra, message):
    path = tmp_path / "results.jsonl"
    with Writer(path) as w:
        w.append(header())
        w.append(case("a", throughput={"tokens_per_step": 64, "mfu_basis": None},
                      device={"type": "cpu", "name": "x"}, memory={"kind": "cpu", "peak_rss_bytes": 1}))
        w.append(case("b", **extra))
    with pytest.warns(UserWarning, match=r"results.jsonl:3: " + message):
        run = results.read(path)
    assert [c.case_id for c in run.cases] == [cid("a")]


@pytest.mark.parametrize("extra, message", [
    # Found by tests/unit/store/test_properties.py: compare raised a TypeError on each.
    ({"env": {"device_type": "cpu", "env_vars": 1}}, r"\[env.env_vars\] = 1: must be an object, not an integer"),
    ({"devices": 2}, r"\[devices\] = 2: must be an array or null, not an integer"),
    ({"ab": {"id": "x", "env": "A=1"}}, r"\[ab.env\] = 'A=1': must be an object or null, not a string"),
])
def test_header_values_readers_compute_with_must_have_their_type(tmp_path, extra, message):
    path = tmp_path / "results.jsonl"
    with Writer(path) as w:
        w.append(header())
        w.append({**header(), **extra})
        w.append(case("a"))
    with pytest.warns(UserWarning, match=r"results.jsonl:2: " + message):
        run = results.read(path)
    assert len(run.headers) == 1 and len(run.cases) == 1


def test_dumps_strict():
    assert dumps_strict({"a": float("nan"), "b": [float("-inf"), 1.5]}) == '{"a": null, "b": [null, 1.5]}'


def test_merge_writes_atomically(tmp_path, monkeypatch):
    import errno

    path = tmp_path / "results.jsonl"
    write_all(path, [header()])
    before = path.read_text()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer_module.os, "fsync", full)
    with pytest.raises(OSError):
        write_all(path, [header(), case("a")])
    assert path.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]


@pytest.mark.parametrize("damage,said", [
    (lambda r: r.__setitem__("case_id", "gpt/tiny/PT-AMP"),
     "[case_id] = 'gpt/tiny/PT-AMP': does not match its case, whose id is 'gpt/tiny/PT-FP32'"),
    (lambda r: r["case"].__setitem__("graphs", True),
     "[case_id] = 'gpt/tiny/PT-FP32': does not match its case, whose id is 'gpt/tiny/PT-FP32/graphs'"),
    (lambda r: r.__setitem__("type", "header"), "[type] = 'header': a header holding a case_id ('gpt/tiny/PT-FP32')"),
    (lambda r: r["case"]["settings"].update(warmup_rule="slow"),
     "[case.settings.warmup_rule] = 'slow': unknown value (known: settled, fixed)"),
    (lambda r: r["case"]["settings"].update(seed=2**64), "[case.settings.seed] = 18446744073709551616: is too large"),
], ids=["id-of-another-case", "option-not-in-id", "type-header", "settings-choice", "settings-64-bit"])
def test_a_case_line_that_would_be_filed_wrong_is_skipped_naming_why(tmp_path, damage, said):
    """Damage that reads as a well-formed line, but would file its measurements under another case, drop them as a
    second header, or hold a value no run of this tebench used: the line is skipped, and the warning says why."""
    from conftest import FIXTURES, read_jsonl, write_jsonl

    records = read_jsonl(FIXTURES / "cpu-smoke.jsonl")
    assert records[1]["case_id"] == "gpt/tiny/PT-FP32"
    damage(records[1])
    with pytest.warns(UserWarning) as caught:
        run = results.read(write_jsonl(tmp_path / "d.jsonl", records))
    assert f"d.jsonl:2: {said}" in " ".join(str(w.message) for w in caught)
    assert "gpt/tiny/PT-FP32" not in {c.case_id for c in run.cases} and len(run.cases) == len(records) - 2
