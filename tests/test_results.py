"""The results file: schema versions, durability, damaged lines."""

from __future__ import annotations

import json

import pytest

from tebench import results


def header() -> dict:
    return {"type": "header", "run_id": "r1", "env": {"device_type": "cpu"}}


def case(case_id: str, status: str = "ok", **extra) -> dict:
    """A minimal well-formed case record."""
    workload, size, mode = case_id.split("/")[:3] if case_id.count("/") >= 2 else ("gpt", case_id, "PT-FP32")
    return {"type": "case", "case_id": case_id, "round": 0, "status": status,
            "case": {"workload": workload, "size": size, "mode": mode, "dims": {}}, **extra}


def test_roundtrip_and_latest(tmp_path):
    path = tmp_path / "results.jsonl"
    with results.Writer(path) as w:
        w.append(header())
        w.append(case("a", "failed"))
        w.append(case("a"))
    run = results.read(tmp_path)
    assert run.run_id == "r1" and len(run.cases) == 2
    assert run.latest()[("a", 0)]["status"] == "ok"
    assert all(c["schema_version"] == results.SCHEMA_VERSION for c in run.cases)


def test_partial_last_line_is_skipped_and_appends_start_clean(tmp_path):
    path = tmp_path / "results.jsonl"
    with results.Writer(path) as w:
        w.append(header())
        w.append(case("a"))
    with path.open("a") as fh:
        fh.write('{"schema": "tebench.results", "schema_ver')  # killed mid-write
    with pytest.warns(UserWarning, match="unreadable"):
        assert len(results.read(path).cases) == 1
    with results.Writer(path) as w:
        w.append(case("b"))
    with pytest.warns(UserWarning):
        run = results.read(path)
    assert [c["case_id"] for c in run.cases] == ["a", "b"]


def test_newer_schema_is_refused_with_advice(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"schema": "tebench.results", "schema_version": 99, "type": "header"}) + "\n")
    with pytest.raises(results.SchemaError, match="schema v99.*upgrade tebench"):
        results.read(path)


def test_older_schema_is_refused_with_advice(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MIN_READABLE_VERSION", 2)
    monkeypatch.setattr(results, "SCHEMA_VERSION", 3)
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"schema": "tebench.results", "schema_version": 1, "type": "header"}) + "\n")
    with pytest.raises(results.SchemaError, match="older than the oldest"):
        results.read(path)


def test_foreign_file_is_refused(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(results.SchemaError, match="not a tebench results record"):
        results.read(path)
    with pytest.raises(FileNotFoundError, match="no results file"):
        results.read(tmp_path / "missing")
