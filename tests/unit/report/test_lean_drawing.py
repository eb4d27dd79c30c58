"""The report's charts drawn with less work look the same: ticks out of view are not made, and the FP8-state
charts are drawn into one reused figure. Compared pixel by pixel with the plain way of drawing them."""

from __future__ import annotations

import io

import numpy as np
import pytest

from conftest import FIXTURES
from tebench import report
from tebench.report import charts, tables

H200 = FIXTURES / "h200-crossover.jsonl"


@pytest.fixture(scope="module")
def h200():
    sources = report.load_all([H200])
    return sources, tables.case_frame(sources)


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


def _plain_png(fig) -> bytes:
    """The figure saved as matplotlib saves it, without :func:`charts.lean_ticks`."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=charts.DPI, pil_kwargs=report.pool.PNG_SETTINGS)
    return buf.getvalue()


def _ticks_made(fig) -> int:
    return sum(len(axis.majorTicks) + len(axis.minorTicks) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis))


def test_lean_ticks_draw_the_same_pixels_with_fewer_ticks(h200):
    sources, df = h200
    # The loss chart has log axes (minor ticks over whole decades); the memory chart, its own byte locator.
    for make in (lambda: charts.loss_curves(sources, df), lambda: charts.memory(df), lambda: charts.speedup(df)):
        plain, lean = make(), make()
        plain_png, lean_png = _plain_png(plain), report.png_bytes(lean)
        assert np.array_equal(_pixels(plain_png), _pixels(lean_png))
        assert _ticks_made(lean) < _ticks_made(plain)


def test_in_view_keeps_every_tick_inside_the_view_edges_included():
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator

    ax = Figure().subplots()
    ax.set_xlim(1.0, 3.0)
    ax.xaxis.set_major_locator(charts._InView(FixedLocator([0.0, 1.0, 2.0, 3.0, 4.0])))
    assert list(ax.xaxis.get_majorticklocs()) == [1.0, 2.0, 3.0]
    ax.set_xscale("log")
    ax.set_xlim(10.0, 1000.0)
    ax.xaxis.set_major_locator(charts._InView(FixedLocator([1.0, 10.0, 100.0, 1000.0, 1e4])))
    assert list(ax.xaxis.get_majorticklocs()) == [10.0, 100.0, 1000.0]


def test_lean_ticks_leave_autoscaling_as_it_was():
    from matplotlib.figure import Figure

    def chart(log: bool, ys: list[float]):
        fig = Figure(figsize=(3, 2), dpi=charts.DPI)
        ax = fig.subplots()
        ax.plot([0, 1], ys)
        # With a span given, nothing asks for the limits before the figure is drawn: autoscaling then
        # runs after lean_ticks has wrapped the locators, and asks them.
        charts._axis(ax.yaxis, log, span=(min(ys), max(ys)) if log else None)
        return fig

    # An axis over one value, log and linear, and a log axis over two decades.
    for log, ys in ((True, [5.0, 5.0]), (True, [0.5, 50.0]), (False, [3.0, 3.0])):
        plain, lean = chart(log, ys), chart(log, ys)
        assert np.array_equal(_pixels(_plain_png(plain)), _pixels(report.png_bytes(lean)))
        assert plain.axes[0].get_ylim() == lean.axes[0].get_ylim()


def test_lean_ticks_leave_default_formatted_axes_alone():
    from matplotlib.figure import Figure
    from matplotlib.ticker import AutoLocator

    fig = Figure()
    ax = fig.subplots()
    ax.plot([0, 7], [0.5, 2.0])
    charts._axis(ax.yaxis, False)
    charts.lean_ticks(fig)
    # The x axis keeps matplotlib's own labels, whose decimals depend on every location: not trimmed.
    assert type(ax.xaxis.get_major_locator()) is AutoLocator
    assert isinstance(ax.yaxis.get_major_locator(), charts._InView)
    charts.lean_ticks(fig)  # twice: not wrapped twice
    assert not isinstance(ax.yaxis.get_major_locator().inner, charts._InView)


def test_fp8_state_charts_drawn_into_a_reused_figure_look_as_drawn_fresh(h200):
    sources, df = h200
    chosen, _ = report.fp8_selection(sources, df)
    records = [rec for _, rec, _ in chosen]
    assert len(records) >= 2
    reuse: dict = {}
    # A fresh figure per chart, then the same charts one after another in one figure, in reverse order too.
    fresh = [report.png_bytes(charts.fp8_state(rec, note="n")) for rec in records]
    reused = [report.png_bytes(charts.fp8_state(rec, note="n", reuse=reuse)) for rec in records]
    backwards = [report.png_bytes(charts.fp8_state(rec, note="n", reuse=reuse)) for rec in reversed(records)]
    assert len(reuse) < len(records)  # figures were reused
    for one, two, three in zip(fresh, reused, reversed(backwards)):
        assert np.array_equal(_pixels(one), _pixels(two))
        assert np.array_equal(_pixels(one), _pixels(three))


def test_fp8_state_charts_in_the_pool_look_as_drawn_one_by_one(h200, monkeypatch):
    sources, df = h200
    chosen, _ = report.fp8_selection(sources, df)
    jobs = [job[3] for job in report.chart_jobs(sources, df, None, chosen) if job[0].startswith("fp8_state_")]
    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", "1")
    serial = report.draw_all(jobs)
    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", "2")
    forked = report.draw_all(jobs)
    fresh = [report.png_bytes(charts.fp8_state(rec, note=why)) for _, rec, why in chosen]
    for one, two, three in zip(serial, forked, fresh):
        assert np.array_equal(_pixels(one), _pixels(three)) and np.array_equal(_pixels(two), _pixels(three))


@pytest.mark.parametrize("processes", ["1", "2"])
def test_drawing_leaves_the_collector_as_it_found_it(monkeypatch, processes):
    import gc

    from matplotlib.figure import Figure

    def job():
        fig = Figure(figsize=(1, 1))
        fig.subplots().plot([0, 1], [0, 1])
        return fig

    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", processes)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    pngs = report.draw_all([job, job, lambda: None])
    assert pngs[0] and pngs[1] and pngs[2] is None
    # The heap frozen and the collector off only while drawing: afterwards this process collects as before.
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_report_leaves_the_collector_as_it_found_it(tmp_path):
    import gc

    assert gc.isenabled() and gc.get_freeze_count() == 0
    out = report.render([FIXTURES / "cpu-smoke.jsonl"], tmp_path / "rep")
    assert (out / "report.md").is_file()
    assert gc.isenabled() and gc.get_freeze_count() == 0
