"""Reports render from stored results alone: fixtures, several machines, partial runs, hostile strings."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from conftest import FIXTURES
from conftest import read_jsonl as lines
from conftest import write_jsonl as write
from tebench import report
from tebench.report import md_escape, md_table

CPU = FIXTURES / "cpu-smoke.jsonl"
H200 = FIXTURES / "h200-crossover.jsonl"
H200_DIST = FIXTURES / "h200x2-distributed.jsonl"
H200_MODULES = FIXTURES / "h200-modules-benchmark.json"


def check_self_contained(html: str) -> None:
    # No request may leave the file: every src/href is a data URI or a fragment.
    for attr in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert attr.startswith(("data:", "#")), attr
    assert "<script" not in html.lower() and "@import" not in html and "url(" not in html


def test_render_cpu_fixture(tmp_path):
    out = report.render([CPU], tmp_path / "rep")
    html = (out / "index.html").read_text()
    check_self_contained(html)
    for section in ("headline", "environment", "cases", "charts", "busy", "fp8", "not-run", "reproduce"):
        assert f'id="{section}"' in html
    assert html.count("data:image/png;base64,") >= 4
    assert "gpt/tiny/PT-AMP+compile" in html and "needs a CUDA GPU" in html
    md = (out / "report.md").read_text()
    assert "| machine | workload | size | fastest mode |" in md
    assert "<details><summary>All 11 cases</summary>" in md
    for png in re.findall(r"\]\(([^)]+\.png)\)", md):
        assert (out / png).is_file()
    assert (out / "cases.csv").read_text().count("\n") == 12


def test_multi_machine_comparison(tmp_path):
    other = [copy.deepcopy(r) for r in lines(CPU)]
    other[0]["env"]["gpus"] = [{"index": 0, "name": "NVIDIA Test GPU", "capability": [9, 0],
                                "memory_bytes": 1 << 30, "multiprocessors": 1}]
    other[0]["env"]["torch"] = "9.9"
    for r in other[1:]:
        if r.get("timing"):
            r["timing"]["samples_ms"] = [s * 2 for s in r["timing"]["samples_ms"]]
    second = write(tmp_path / "other.jsonl", other)
    out = report.render([CPU, second], tmp_path / "rep")
    html = (out / "index.html").read_text()
    assert 'id="comparison"' in html and "different environments" in html
    assert "NVIDIA Test GPU / CPU (AMD EPYC)" in html  # the ratio column
    md = (out / "report.md").read_text()
    assert "Machines side by side" in md and "Different environments" in md
    assert (out / "comparison.png").is_file()


def test_same_device_twice_gets_distinct_labels(tmp_path):
    copy_ = write(tmp_path / "again.jsonl", lines(CPU))
    sources = report.load_all([CPU, copy_])
    assert len({s.label for s in sources}) == 2


def test_partial_run_is_reported_not_hidden(tmp_path):
    records = lines(CPU)
    partial = write(tmp_path / "partial.jsonl", records[:4])  # header + 3 cases of 11 planned
    with open(partial, "a") as fh:
        fh.write('{"schema": "tebench.results", "schema_version": 1, "type": "ca')  # killed mid-write
    with pytest.warns(UserWarning):
        out = report.render([partial], tmp_path / "rep")
    html = (out / "index.html").read_text()
    assert "8 planned case(s) have no result yet" in html
    assert "unreadable line" in html


HOSTILE = '<script>alert("x")</script> | **bold** [link](http://evil.example) `code` _u_'


def test_hostile_strings_cannot_inject_markup(tmp_path):
    records = lines(CPU)
    for r in records[1:]:
        if r["status"] == "skipped":
            r["reason"] = HOSTILE
            r["case_id"] = r["case_id"] + HOSTILE
    records[0]["command"] = ["tebench", HOSTILE]
    path = write(tmp_path / "hostile.jsonl", records)
    out = report.render([path], tmp_path / "rep")
    html = (out / "index.html").read_text()
    check_self_contained(html)
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    md = (out / "report.md").read_text()
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "[link](http" not in md and "**bold**" not in md and "http://evil" not in md
    # Every table row still has the same number of cells: no row was split by '|'.
    for block in re.findall(r"(\| machine \| case \| status \| reason \|\n(?:\|.*\n)+)", md):
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in block.strip().splitlines()}
        assert len(widths) == 1, widths


def test_md_escape_and_table():
    assert md_escape("a|b") == "a\\|b"
    assert md_escape("<b>") == "&lt;b&gt;"
    assert md_escape("x\ny") == "x y"
    import pandas as pd

    assert md_table(pd.DataFrame({"a": ["1|2"]})).splitlines() == ["| a |", "|---|", "| 1\\|2 |"]


def test_unknown_schema_version_is_refused(tmp_path, tebench_cli):
    records = lines(CPU)
    for r in records:
        r["schema_version"] = 0
    old = write(tmp_path / "old.jsonl", records)
    proc = tebench_cli("report", str(old), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 2 and "older than the oldest this tebench reads" in proc.stderr


def test_render_h200_fixture(tmp_path):
    """A real H200 run (crossover subset): crossover table, busy fractions, FP8 state charts."""
    out = report.render([H200], tmp_path / "rep")
    html = (out / "index.html").read_text()
    check_self_contained(html)
    assert "NVIDIA H200" in html and 'id="crossover"' in html and "CPU-bound" in html
    assert (out / "fp8_state_0.png").is_file() and (out / "scaling.png").is_file()
    md = (out / "report.md").read_text()
    assert "Where FP8 starts to pay" in md and "| NVIDIA H200 | gpt | on | PT-AMP | s1024 |" in md


def test_render_h200_distributed_fixture(tmp_path):
    out = report.render([H200_DIST], tmp_path / "rep")
    md = (out / "report.md").read_text()
    assert "Multi-GPU scaling" in md
    section = md.split("Multi-GPU scaling", 1)[1]
    row = next(line for line in section.splitlines() if "gpt/d2048/PT-AMP/ddpx2" in line)
    efficiency = float(re.findall(r"(\d+\.\d)%", row)[0])
    assert 50 < efficiency <= 100


def test_render_pytest_benchmark_json(tmp_path):
    out = report.render([H200_MODULES], tmp_path / "rep")
    md = (out / "report.md").read_text()
    assert "module/layernorm\\_mlp.h4096.t16384/TE-FP8/delayed.HYBRID.h16.max" in md
    assert "pytest-benchmark" in md


def test_h200_vs_cpu_side_by_side(tmp_path):
    out = report.render([H200, CPU], tmp_path / "rep")
    assert "different environments" in (out / "index.html").read_text()


def test_names_that_look_like_mathtext_render_as_typed(tmp_path):
    """A size named like TeX (``$\\foo{$``) used to crash matplotlib's mathtext: no report at all."""
    import json

    from tebench.report import render

    name = "$\\foo{$"
    text = (FIXTURES / "cpu-smoke.jsonl").read_text()
    records = [json.loads(line) for line in text.splitlines()]
    for r in records:
        if r["type"] == "case":
            r["case"]["size"] = name
            r["case_id"] = r["case_id"].replace("/tiny/", f"/{name}/")
        else:
            r["case_ids"] = [c.replace("/tiny/", f"/{name}/") for c in r.get("case_ids", [])]
    src = tmp_path / "results.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = render([src], tmp_path / "report")
    assert name in (out / "index.html").read_text() and md_escape(name) in (out / "report.md").read_text()
    assert list(out.glob("*.png"))
