"""Finite but extreme step times, and foreign parts of a pytest-benchmark file: a refusal (exit 2, or the
line skipped naming the field), never a statistic that overflows into the guard's exit 70."""

from __future__ import annotations

import copy
import json
import math

import pytest

from conftest import FIXTURES
from conftest import read_jsonl as lines
from conftest import write_jsonl as write
from tebench import cli
from tebench.schema.records import MAX_STEP_MS, Summary

CPU = FIXTURES / "cpu-smoke.jsonl"
MODULES = FIXTURES / "h200-modules-benchmark.json"


def _report(capsys, tmp_path, path) -> tuple[int, str]:
    code = cli.main(["report", str(path), "--out", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return code, err


@pytest.mark.parametrize("samples", [[1e308] * 5, [1.0, 2.0, 3.0, 1e300], [1.7e308, 0.0]],
                         ids=["all-1e308", "one-1e300", "max-and-zero"])
def test_summary_of_finite_samples_is_finite(samples):
    s = Summary.of(samples)
    for name in ("mean", "stdev", "median", "min", "max", "iqr"):
        assert math.isfinite(getattr(s, name)), (name, s)
    assert s.mean == pytest.approx(sum(x / len(samples) for x in samples))


def test_summary_of_ordinary_samples_is_unchanged():
    import numpy as np

    a = [3.0, 1.5, 2.25, 9.0]
    s = Summary.of(a)
    assert s.mean == float(np.mean(a)) and s.stdev == float(np.std(a, ddof=1))


def test_iqr_rel_under_a_tiny_median_is_null_not_inf():
    assert Summary.of([0.0, 1e-320, 1e-320, 1e10, 1e10]).iqr_rel is None


@pytest.mark.parametrize("value", [1e308, 1e300, MAX_STEP_MS * 2])
def test_huge_step_time_skips_the_line_naming_the_field(tmp_path, capsys, value):
    records = lines(CPU)
    for r in records:
        if r.get("type") == "case" and r.get("timing"):
            r["timing"]["samples_ms"][-1] = value
    path = tmp_path / "huge.jsonl"
    write(path, records)
    code, err = _report(capsys, tmp_path, path)
    assert code == 0 and "timing.samples_ms[" in err and "must be at most" in err, err


def _bench_file(tmp_path, change) -> str:
    data = json.loads(MODULES.read_text())
    change(data)
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("seconds", [1e305, 1e306, 1e300])
def test_pytest_benchmark_huge_times_are_refused(tmp_path, capsys, seconds):
    def change(d):
        d["benchmarks"][0]["stats"]["data"][0] = seconds
    code, err = _report(capsys, tmp_path, _bench_file(tmp_path, change))
    assert code == 2 and "benchmarks[0].stats.data" in err, err


@pytest.mark.parametrize("seconds", [0.0, 1e-320])
def test_pytest_benchmark_times_of_no_time_are_refused(tmp_path, capsys, seconds):
    def change(d):
        d["benchmarks"][0]["stats"]["data"] = [seconds] * len(d["benchmarks"][0]["stats"]["data"])
    code, err = _report(capsys, tmp_path, _bench_file(tmp_path, change))
    assert code == 2 and "benchmarks[0].stats.data" in err and "a step takes time" in err, err
    assert "overflow" not in err


def test_pytest_benchmark_empty_data_names_file_and_benchmark(tmp_path, capsys):
    def change(d):
        d["benchmarks"][1]["stats"]["data"] = []
    path = _bench_file(tmp_path, change)
    code, err = _report(capsys, tmp_path, path)
    assert code == 2 and path in err and "benchmarks[1]" in err and "stats.data is empty" in err, err
    assert "test_module[" in err, err


@pytest.mark.parametrize("env", ["a string", ["a", "list"], 7, {"gpus": "one"}, {"gpus": ["H200"]}],
                         ids=["str", "list", "int", "gpus-str", "gpus-of-str"])
def test_foreign_first_benchmark_env_is_checked(tmp_path, capsys, env):
    def change(d):
        foreign = copy.deepcopy(d["benchmarks"][0])
        foreign["extra_info"] = {"env": env}  # not one of tebench's: no 'module'
        d["benchmarks"].insert(0, foreign)
    path = _bench_file(tmp_path, change)
    code, err = _report(capsys, tmp_path, path)
    assert code == 2 and path in err and "benchmarks[0].extra_info" in err and "env" in err, err


def test_pytest_benchmark_entry_with_fullname_only_is_reported(tmp_path, capsys):
    def change(d):
        del d["benchmarks"][0]["name"]
    code, _ = _report(capsys, tmp_path, _bench_file(tmp_path, change))
    assert code == 0 and (tmp_path / "rep" / "report.md").is_file()


def test_pytest_benchmark_entry_without_any_name_is_refused(tmp_path, capsys):
    def change(d):
        del d["benchmarks"][0]["name"]
        d["benchmarks"][0].pop("fullname", None)
    code, err = _report(capsys, tmp_path, _bench_file(tmp_path, change))
    assert code == 2 and "benchmarks[0].name" in err, err


@pytest.mark.parametrize("key", ["mode", "module"])
def test_pytest_benchmark_lone_surrogate_is_refused_naming_the_key(tmp_path, capsys, key):
    def change(d):
        d["benchmarks"][0]["extra_info"][key] += "\ud800"
    code, err = _report(capsys, tmp_path, _bench_file(tmp_path, change))
    assert code == 2 and "benchmarks[0]" in err and f"extra_info.{key}" in err, err


@pytest.mark.parametrize("where,change", [
    ("machine_info.node = 5", lambda d: d["machine_info"].__setitem__("node", 5)),
    ("machine_info.cpu.brand_raw = 7", lambda d: d["machine_info"].setdefault("cpu", {}).__setitem__("brand_raw", 7)),
    ("datetime = 5", lambda d: d.__setitem__("datetime", 5)),
    ("benchmarks[0].extra_info: [case.dims.hidden]", lambda d: d["benchmarks"][0]["extra_info"].__setitem__("hidden", None)),
    ("benchmarks[0].extra_info: [tokens_per_step]", lambda d: d["benchmarks"][0]["extra_info"].__setitem__("tokens", 10**30)),
], ids=["node", "brand_raw", "datetime", "hidden-null", "tokens-huge"])
def test_pytest_benchmark_damage_is_named_by_the_files_own_key(tmp_path, capsys, where, change):
    path = _bench_file(tmp_path, change)
    code, err = _report(capsys, tmp_path, path)
    assert code == 2 and f"{path}: {where}" in err, err


def _renamed_copy(d: dict, slower: float) -> None:
    twin = copy.deepcopy(d["benchmarks"][0])
    twin["name"] += "-slow"
    twin["stats"]["data"] = [v * slower for v in twin["stats"]["data"]]
    d["benchmarks"].append(twin)


@pytest.mark.parametrize("where,change", [
    # Once pooled as two rounds of one case: the report's median was of two different benchmarks.
    ("benchmarks[15] ('test_module[linear-PT-AMP-4096-16384]-slow') times the same case as benchmarks[0]",
     lambda d: _renamed_copy(d, 100.0)),
    # Once an empty report, "All 0 cases", exit 0.
    ("none of its 15 benchmark(s) is one of tebench's module benchmarks",
     lambda d: [b["extra_info"].pop("module") for b in d["benchmarks"]]),
    ("benchmarks[0].extra_info: [case.mode] = 'PT-FP64': unknown value",
     lambda d: d["benchmarks"][0]["extra_info"].__setitem__("mode", "PT-FP64")),
    ("benchmarks[0].extra_info.mode = None: missing", lambda d: d["benchmarks"][0]["extra_info"].pop("mode")),
], ids=["same-case", "no-module-benchmark", "mode-unknown", "mode-missing"])
def test_pytest_benchmark_entries_are_checked_as_a_results_file_is(tmp_path, capsys, where, change):
    path = _bench_file(tmp_path, change)
    code, err = _report(capsys, tmp_path, path)
    assert code == 2 and f"{path}: {where}" in err, err


def test_a_step_time_of_zero_shows_the_case_invalid_not_infinitely_fast(tmp_path, capsys):
    """A damaged record whose steps took 0 ms: `compare` calls it invalid, and the report says the same
    (status invalid, the reason naming the round and value, no step time) instead of a 0-ms fastest case."""
    records = lines(CPU)
    hit = next(r for r in records if r.get("type") == "case" and r["case_id"] == "gpt/tiny/PT-AMP+compile")
    hit["timing"]["samples_ms"] = [0.0] * len(hit["timing"]["samples_ms"])
    path = tmp_path / "zero.jsonl"
    write(path, records)
    code, err = _report(capsys, tmp_path, path)
    assert code == 0, err
    md = (tmp_path / "rep" / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| gpt/tiny/PT-AMP+compile |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "invalid" and cells[2] == "–", row  # status, step ms
    assert "damaged record, not counted: round 0: step time 0.0" in md
    headline = md.split("**gpt**", 1)[1].split("\n\n", 2)[1]
    assert "PT-AMP+compile" not in headline.split("\n", 2)[2], headline  # never the fastest


def test_a_memory_peak_beyond_an_exbibyte_skips_the_line_naming_the_field(tmp_path, capsys):
    records = lines(CPU)
    for r in records:
        if r.get("type") == "case" and r.get("memory"):
            r["memory"]["peak_rss_bytes"] = 1e300
    path = tmp_path / "huge-memory.jsonl"
    write(path, records)
    code, err = _report(capsys, tmp_path, path)
    assert code == 0 and "memory.peak_rss_bytes" in err and "must be at most" in err, err
    assert "overflow" not in err


def test_a_memory_peak_of_zero_is_no_reading_not_an_infinite_share(tmp_path, capsys):
    """PT-AMP's peak of 0 bytes (a damaged record) made every case's memory "+inf%" against it."""
    records = lines(CPU)
    for r in records:
        if r.get("type") == "case" and r.get("memory") and r["case_id"].endswith("/PT-AMP"):
            r["memory"]["peak_rss_bytes"] = 0
    path = tmp_path / "zero-memory.jsonl"
    write(path, records)
    code, err = _report(capsys, tmp_path, path)
    assert code == 0, err
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "inf%" not in md and "nan%" not in md


def test_a_size_that_reads_as_a_formula_opens_as_text_in_cases_csv(tmp_path, capsys):
    """Markdown and HTML escape a results file's text; the CSV wrote it raw, and a spreadsheet ran it."""
    import csv

    records = lines(CPU)
    for r in records:
        if r.get("type") == "case" and r["case"]["workload"] == "gpt":
            r["case"]["size"] = '=HYPERLINK("http://evil.example/","click")'
            r["case_id"] = r["case_id"].replace("/tiny/", "/" + r["case"]["size"] + "/")
    path = tmp_path / "formula.jsonl"
    write(path, records)
    code, err = _report(capsys, tmp_path, path)
    assert code == 0, err
    with open(tmp_path / "rep" / "cases.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    sizes = {row["size"] for row in rows if row["workload"] == "gpt"}
    assert sizes == {"'=HYPERLINK(\"http://evil.example/\",\"click\")"}, sizes
    assert all(not v.startswith(("=", "+", "@")) for row in rows for v in row.values())
