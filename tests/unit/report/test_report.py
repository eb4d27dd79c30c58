"""Reports render from stored results alone: fixtures, several machines, partial runs, hostile strings."""

from __future__ import annotations

import copy
import math
import re

import numpy as np

import pytest

from conftest import FIXTURES, unsaid
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
    for section in ("answer", "headline", "crossover", "environment", "cases", "charts", "not-run", "reproduce"):
        assert f'id="{section}"' in html
    # A CPU run has no GPU-busy numbers and no FP8 state: no sections for them.
    assert 'id="busy"' not in html and "How busy the GPU was" not in html and 'id="fp8"' not in html
    assert html.count("data:image/png;base64,") >= 4
    assert "gpt/tiny/PT-AMP+compile" in html and "needs a CUDA GPU" in html
    # The answer comes before any chart or the case table.
    assert html.index('id="answer"') < html.index('id="crossover"') < html.index('id="charts"') < html.index('id="cases"')
    md = (out / "report.md").read_text()
    assert "| workload | size | fastest mode |" in md  # one machine: no machine column
    pays = next((line for line in md.splitlines() if "Where FP8 pays" in line), "")
    # The passes' margin stands beside their count on the first screen (the CPU fixture's band, ±10%).
    assert "**Loss parity: 3 pass ±10%**" in md and unsaid(pays, "TE-FP8", "skipped") == [], pays
    assert '<span class="pill ok">3 pass ±10%</span>' in html
    assert "<details><summary>All 11 cases</summary>" in md
    # Complete without image files: no image, no link to a local file.
    assert "![" not in md and ".png" not in md
    assert "GPU busy" not in md
    assert (out / "cases.csv").read_text().count("\n") == 12
    assert (out / "speedup.png").is_file()  # the PNGs are still written, for publishing


def test_assets_url_links_charts_absolutely(tmp_path, tebench_cli):
    out = report.render([CPU], tmp_path / "rep", assets_url="https://example.org/pr-7/run-1")
    md = (out / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert links and all(u.startswith("https://example.org/pr-7/run-1/") for u in links)
    for url in links:
        assert (out / url.rsplit("/", 1)[1]).is_file()
    proc = tebench_cli("report", str(CPU), "--out", str(tmp_path / "rel"), "--assets-url", "charts/")
    assert proc.returncode == 2 and "--assets-url" in proc.stderr and "Traceback" not in proc.stderr


def test_an_assets_url_that_would_break_the_image_links_is_percent_encoded(tmp_path):
    from tebench import cli

    out = tmp_path / "rep"
    assert cli.main(["report", str(CPU), "--out", str(out), "--assets-url", 'https://x.org/a)b"<c>']) == 0
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (out / "report.md").read_text())
    assert links and all(u.startswith("https://x.org/a%29b%22%3Cc%3E/") and u.endswith(".png") for u in links)


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
    assert unsaid(html, "8 planned case(s)", "no result") == []
    assert "unreadable line" in html


HOSTILE = '<script>alert("x")</script> | **bold** [link](http://evil.example) `code` _u_'


def test_hostile_strings_cannot_inject_markup(tmp_path):
    records = lines(CPU)
    for r in records[1:]:
        if r["status"] == "skipped":
            r["reason"] = HOSTILE
            r["case"]["size"] += HOSTILE  # and so its id, which must match its case
            workload, size, variant = r["case_id"].split("/", 2)
            r["case_id"] = f"{workload}/{size}{HOSTILE}/{variant}"
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
    blocks = re.findall(r"(\| case \| status \| reason \|\n(?:\|.*\n)+)", md)
    assert blocks
    for block in blocks:
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in block.strip().splitlines()}
        assert len(widths) == 1, widths


def test_a_case_id_that_disagrees_with_its_case_is_skipped_naming_both(tmp_path):
    """A hand-edited id (one that is not workload/size/mode ended report with an IndexError, exit 70; another
    case's id filed these measurements under that case, or replaced its own): the line is skipped, naming the id
    and its case's. A history series labels by its id past workload and size, the whole of one without them."""
    from tebench.analysis.history_changes import Series

    records = lines(CPU)
    edited = next(r for r in records[1:] if r.get("loss"))
    real, edited["case_id"] = edited["case_id"], "x"
    with pytest.warns(UserWarning, match=rf"x.jsonl:2: \[case_id\] = 'x': does not match its case, whose id is "
                                         rf"'{real}'"):
        out = report.render([write(tmp_path / "x.jsonl", records)], tmp_path / "rep")
    assert "| x |" not in (out / "report.md").read_text()
    series = Series("cpu", "gpt/tiny", "x", [], [], [], [], [])
    assert series.variant == "x" and series.mode == "x"
    assert Series("cpu", "gpt/tiny", "gpt/tiny/TE-FP8/current.HYBRID", [], [], [], [], []).mode == "TE-FP8"


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
    assert proc.returncode == 2, proc.stderr
    assert unsaid(proc.stderr, old, "older than the oldest") == [], proc.stderr


def test_render_h200_fixture(tmp_path):
    """A real H200 run (crossover subset): crossover table, busy fractions, FP8 state charts."""
    out = report.render([H200], tmp_path / "rep")
    html = (out / "index.html").read_text()
    check_self_contained(html)
    assert "NVIDIA H200" in html and 'id="crossover"' in html and "launch-bound" in html
    assert (out / "fp8_state_0.png").is_file() and (out / "scaling.png").is_file()
    md = (out / "report.md").read_text()
    assert "**Where FP8 pays**" in md
    # Every TE-FP8 case of this fixture fails loss parity (uncalibrated delayed scaling): none may be the
    # crossover (it was s1024 with CUDA graphs when speed alone decided), each size says why.
    row = next((line for line in md.splitlines() if line.startswith("| gpt | on | PT-AMP |")), "")
    assert unsaid(row, "not reached", "s2048") == [] and "s1024: not counted" in md, row


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


def _judge_as(monkeypatch, verdicts: dict[str, tuple[str, str]]):
    """Make parity judge the named cases as given (the verdict rules themselves are tested in test_parity)."""
    from tebench.analysis import parity

    real = parity.judge

    def judge(records, record, cache=None):
        out = real(records, record, cache)
        if record.case_id in verdicts:
            out.verdict, out.reason = verdicts[record.case_id]
        return out

    monkeypatch.setattr(parity, "judge", judge)


def test_inconclusive_is_counted_apart_and_listed_with_reasons(tmp_path, monkeypatch):
    _judge_as(monkeypatch, {
        "gpt/tiny/PT-AMP": ("inconclusive", "reference did not learn: PT-FP32 went 4.6 -> 4.7"),
        "gpt/tiny/PT-AMP+compile": ("fail", "curve left the reference band at step 12"),
    })
    out = report.render([CPU], tmp_path / "rep")
    md = (out / "report.md").read_text()
    verdicts = next((line for line in md.splitlines() if line.startswith("**Loss parity")), "")
    assert unsaid(verdicts, "1 pass", "1 fail", "1 inconclusive", "reference did not learn") == [], verdicts
    # The headline row of gpt/tiny counts the verdicts; it never says "all N pass".
    row = next(line for line in md.splitlines() if line.startswith("| gpt | tiny |"))
    assert "1 fail · 1 inconclusive" in row and "pass" not in row
    assert "all " not in md.split("<details>")[0]
    # Both are listed, failures first, each with its reason.
    lines_md = md.splitlines()
    failed = next(i for i, line in enumerate(lines_md) if "**fail** gpt/tiny/PT-AMP+compile" in line)
    unsure = next(i for i, line in enumerate(lines_md) if "**inconclusive** gpt/tiny/PT-AMP:" in line)
    assert failed < unsure
    assert unsaid(lines_md[failed], "reference band", "step 12") == [], lines_md[failed]
    assert unsaid(lines_md[unsure], "did not learn", "PT-FP32", "4.6", "4.7") == [], lines_md[unsure]
    html = (out / "index.html").read_text()
    assert 'id="parity"' in html and "1 inconclusive" in html and "reference did not learn" in html
    assert html.index('id="parity"') < html.index('id="charts"')


def test_rows_ordered_workload_size_mode():
    import pandas as pd

    from tebench.report import tables

    rows = [("distill", "tutorial", "TE-FP8", 1e9), ("gpt", "d4096", "PT-AMP", 4e13), ("gpt", "tutorial", "TE-BF16", 7e11),
            ("gpt", "d512", "PT-FP32", 1e10), ("gpt", "tutorial", "PT-FP32", 7e11), ("gpt", "d4096", "PT-FP32", None),
            ("distill", "tutorial", "PT-AMP", 1e9), ("gpt", "d1024", "TE-FP8", 2e12)]
    df = pd.DataFrame([{"source": "m", "workload": w, "size": s, "mode": m, "variant": m, "graphs": False,
                        "fp8_weights": False, "parallel": "single", "recipe": None, "flops_per_step": f}
                       for w, s, m, f in rows])
    got = [(r.workload, r.size, r.mode) for r in tables.order_rows(df).itertuples()]
    assert got == [("distill", "tutorial", "PT-AMP"), ("distill", "tutorial", "TE-FP8"),
                   ("gpt", "d512", "PT-FP32"), ("gpt", "tutorial", "PT-FP32"), ("gpt", "tutorial", "TE-BF16"),
                   ("gpt", "d1024", "TE-FP8"), ("gpt", "d4096", "PT-FP32"), ("gpt", "d4096", "PT-AMP")]


def test_markdown_stays_within_github_comment_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", "1")
    monkeypatch.setattr(report.pool, "draw", lambda job: None)  # the text is what is tested
    records = lines(CPU)
    head, cases = records[0], records[1:]
    many = [head]
    for i in range(150):  # 1,650 cases: far beyond one comment
        for r in cases:
            r = copy.deepcopy(r)
            workload, size, variant = r["case_id"].split("/", 2)
            r["case"]["size"] = f"{size}-copy{i}"
            r["case_id"] = f"{workload}/{size}-copy{i}/{variant}"
            r["reason"] = (r.get("reason") or "") + " x" * 20
            many.append(r)
    head["case_ids"] = []
    out = report.render([write(tmp_path / "many.jsonl", many)], tmp_path / "rep")
    md = (out / "report.md").read_text()
    assert len(md) <= report.MD_LIMIT < 65_536
    assert "to stay within GitHub's comment limit" in md
    assert md.count("<details>") == md.count("</details>") and md.count("```") % 2 == 0
    assert "**Loss parity:" in md  # the answer at the top survives


def test_text_bar():
    from tebench.report.tables import text_bar

    assert text_bar(1.0, 2.0, width=10) == "████│"
    assert text_bar(2.0, 2.0, width=10) == "████│█████"
    assert text_bar(0.5, 2.0, width=10) == "██▌ │"
    assert text_bar(float("nan"), 2.0) == ""


def test_engineering_units_and_log_rule():
    from tebench.report import charts

    assert charts.eng(1.7e14, "FLOP") == "170 TFLOP"
    assert charts.eng(687_568) == "688k" and charts.eng(999.7) == "1k"
    assert charts._plain(1.0e8) == "100M" and charts._plain(0.5) == "0.5" and charts._plain(1500) == "1,500"
    assert charts.spans([1, 5, 11]) and not charts.spans([1, 5, 10]) and not charts.spans([0, 3])


def test_reference_band_prefers_the_recorded_band():
    from tebench.schema.records import CaseResult
    from tebench.report import charts

    case = {"workload": "gpt", "size": "s", "mode": "PT-FP32", "dims": {},
            "settings": {"parity_atol": 0.05, "parity_rtol": 0.1}}
    ref = CaseResult.from_dict({"case_id": "gpt/s/PT-FP32", "status": "ok", "case": case,
                                "loss": {"per_step": [4.0, 2.0, 1.0]}})
    band = {"step": [0, 1, 2], "lo": [3.0, 1.5, 0.5], "hi": [5.0, 2.5, 1.5], "center": [4.0, 2.0, 1.0]}

    def judged(parity: dict) -> CaseResult:
        return CaseResult.from_dict({"case_id": "gpt/s/TE-BF16", "status": "ok",
                                     "case": {**case, "mode": "TE-BF16"}, "parity": parity})

    recorded = judged({"verdict": "pass", "band": band})
    assert charts.reference_band([recorded], ref) is recorded.parity.band
    fallback = charts.reference_band([judged({"verdict": "pass"})], ref)
    assert fallback.lo == pytest.approx([3.6, 1.8, 0.9]) and fallback.hi == pytest.approx([4.4, 2.2, 1.1])
    # A reference that went infinite mid-curve has no band at that step, and no numpy warning says so.
    ref.loss.per_step[1] = float("inf")
    with np.errstate(all="raise"):
        gap = charts.reference_band([judged({"verdict": "fail"})], ref)
    assert math.isnan(gap.lo[1]) and gap.hi[1] == math.inf and gap.lo[2] == pytest.approx(0.9)


def test_repro_fields_read_as_text():
    src = report.load_all([H200])[0]
    src.header.devices = ["0", "1"]
    row = dict(report.reproduce(src))["rounds / shard / devices"]
    assert row.endswith("/ 0, 1") and "[" not in row


@pytest.fixture(scope="module")
def h200_charts():
    from tebench.report import charts, tables

    sources = report.load_all([H200])
    return sources, tables.case_frame(sources), charts


def _texts(fig):
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]


def test_charts_are_legible(h200_charts):
    import io

    from PIL import Image

    sources, df, charts = h200_charts
    figs = [charts.speedup(df), charts.step_time(df), charts.loss_curves(sources, df), charts.scaling(df)]
    for fig in figs:
        assert min(t.get_fontsize() for t in _texts(fig)) >= 9
        assert "e+" not in " ".join(t.get_text() for t in _texts(fig))
    image = Image.open(io.BytesIO(report.png_bytes(figs[0])))
    assert round(image.info["dpi"][0]) >= 110
    labels = [t.get_text() for ax in figs[3].axes for t in ax.get_xticklabels()]
    assert any(label.endswith("TFLOP") for label in labels)


def test_loss_chart_is_small_multiples_with_the_reference_in_each(h200_charts):
    sources, df, charts = h200_charts
    fig = charts.loss_curves(sources, df)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    sizes = df[df["final_loss"].notna()].groupby(["workload", "size"]).ngroups
    assert len(panels) > sizes  # more than one panel per size
    for ax in panels:
        colors = [line.get_color() for line in ax.get_lines() if line.get_color() == "black" and len(line.get_xdata()) > 2]
        assert colors, ax.get_title()  # the reference curve is in every panel
        assert ax.collections, ax.get_title()  # and its band
        curves = [(line.get_color(), line.get_linestyle()) for line in ax.get_lines() if len(line.get_xdata()) > 2]
        assert len(set(curves)) == len(curves), ax.get_title()  # no two curves alike


def test_fp8_state_charts_cover_largest_size_and_spikes(h200_charts):
    sources, df, charts = h200_charts
    chosen, total = report.fp8_selection(sources, df)
    assert total and chosen
    sizes = {r.size for _, r, _ in chosen}
    assert "s2048" in sizes  # the largest size of the fixture
    fig = charts.fp8_state(chosen[0][1])
    for ax in fig.axes:
        lines = [(line.get_color(), line.get_linestyle()) for line in ax.get_lines()]
        assert len(set(lines)) == len(lines)


def test_loss_spike_detection():
    from tebench.report.tables import loss_spike

    ref = [5.0, 7.0, 5.9, 5.5, 5.0]
    assert loss_spike([5.0, 7.0, 6.0, 5.4, 5.1], ref) is None  # shares the reference's own bump
    assert loss_spike([5.0, 4.8, 8.6, 7.1, 5.0], ref) == 2
    assert loss_spike([5.0, float("nan")], ref) == 1


def test_each_chart_is_drawn_once(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", "1")  # count in this process
    draws = []
    real = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, renderer: (draws.append(id(self)), real(self, renderer))[1])
    out = report.render([H200], tmp_path / "rep")
    pngs = list(out.glob("*.png"))
    # One draw per PNG. The FP8-state charts are drawn one after another into one reused figure, so the
    # figures drawn are fewer than the charts.
    assert len(draws) == len(pngs)
    assert len(set(draws)) < len(pngs)


def test_parallel_and_serial_drawing_give_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", "1")
    one = report.render([CPU], tmp_path / "one")
    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", "2")
    two = report.render([CPU], tmp_path / "two")
    for png in one.glob("*.png"):
        assert png.read_bytes() == (two / png.name).read_bytes(), png.name


def test_compare_names_a_missing_commit_in_words(tmp_path):
    from tebench.analysis import compare
    from tebench.report.compare_markdown import to_markdown

    records = lines(CPU)
    records[0]["env"]["git_commit"] = None
    path = write(tmp_path / "nogit.jsonl", records)
    md = to_markdown(compare.compare(path, path))
    assert "commit None" not in md and unsaid(md, "commit unknown", "git checkout") == []

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


@pytest.mark.parametrize("fields, shown", [
    ({"launch": "prestarted", "prestart_depth": 2, "prestart_pause": True},
     "prestarted (2 per device, stopped beside launch-bound timed steps)"),
    ({"launch": "prestarted", "prestart_depth": 3, "prestart_pause": False}, "prestarted (3 per device, never stopped)"),
    ({"launch": "prestarted", "prestart_depth": 1}, "prestarted (1 per device)"),  # before the pause was recorded
    ({"launch": "cold"}, "cold"),
    ({}, "unrecorded"),
])
def test_the_cost_section_says_how_cases_started(fields, shown):
    from types import SimpleNamespace

    from tebench.schema.records import RunHeader
    from tebench.report import cost_header

    src = SimpleNamespace(label="run", header=RunHeader(**fields))
    assert cost_header(src)["launch"] == shown


@pytest.mark.parametrize("paused_s, shown", [(3.0, True), (0.0, False)])
def test_the_cost_section_says_how_long_importing_workers_stood_stopped(tmp_path, paused_s, shown):
    import json

    from tebench.report import render

    records = [json.loads(line) for line in (FIXTURES / "cpu-smoke.jsonl").read_text().splitlines()]
    cases = [r for r in records if r["type"] == "case" and r.get("phases")]
    for r in cases:
        r["launch"] = {"method": "prestarted", "preload_s": 10.0, "hidden_s": 8.0, "paused_s": paused_s}
    src = tmp_path / "results.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = render([src], tmp_path / "report")
    md = " ".join((out / "report.md").read_text().split())
    html = " ".join((out / "index.html").read_text().split())
    n = len(cases)
    assert unsaid(md, f"{8 * n:,} s", f"{10 * n:,} s", "imports") == []
    said = f"with up to {3 * n:,} s in which the workers stood stopped"
    assert (said in md) is shown and (said in html) is shown


def test_pass_margins_give_the_range_of_what_the_passes_certify():
    """The first screen's verdict line names the passes' margins: one value, a range, none without a margin."""
    import pandas as pd

    from tebench.report import tables

    df = pd.DataFrame({"parity": ["pass", "pass", "fail", "reference"],
                       "parity_margin": [0.01, 0.03, 0.5, math.nan], "parity_reason": ["", "", "", ""]})
    assert tables.pass_margins(df) == "±1.0%–3.0%"
    assert tables.verdict_text(df, reasons=True) == "2 pass ±1.0%–3.0% · 1 fail"
    assert tables.verdict_text(df) == "2 pass · 1 fail"  # the headline's count column stays a count
    assert tables.pass_margins(df.assign(parity_margin=[0.15, 0.15, 0.5, math.nan])) == "±15%"
    assert tables.pass_margins(df.assign(parity_margin=math.nan)) == ""
    assert tables.pass_margins(df.drop(columns="parity_margin")) == ""


def test_a_verdict_stored_without_a_reason_reads_as_none_not_nan():
    """A missing reason is NaN in a frame: it was shown as "inconclusive (nan)"."""
    import pandas as pd

    from tebench.report import tables

    df = pd.DataFrame({"parity": ["inconclusive", "pass"], "parity_reason": [math.nan, math.nan],
                       "parity_margin": [math.nan, 0.01]})
    assert tables.verdict_text(df, reasons=True) == "1 pass ±1.0% · 1 inconclusive (no reason given)"
    assert tables.reason_text(math.nan) is None and tables.reason_text(" ") is None
    assert tables.reason_text("on the edge") == "on the edge"
