"""Small things in the CPU report's charts: round memory ticks, a reference curve that shows, no CUDA-graphs
caption where no case ran under graphs."""

from __future__ import annotations

import numpy as np

from helpers.frame_rows import case_row, case_table
from tebench.report import chart_jobs, charts, load, tables
from conftest import ROOT

CPU_SMOKE = ROOT / "reports" / "cpu-smoke" / "results.jsonl"


def test_memory_ticks_are_round_numbers_of_one_unit_and_few():
    ticks = charts._BytesLocator().tick_values(0, 430 * 2**20)
    assert len(ticks) <= 5
    assert all(float(t / 2**20).is_integer() and (t / 2**20) % 100 == 0 for t in ticks)  # 0, 100 MiB, … never 47.7 MiB
    assert [charts._bytes(t) for t in ticks[1:3]] == ["200 MiB", "400 MiB"]


def test_the_reference_curve_is_drawn_dashed_and_on_top():
    sources = load.load_all([CPU_SMOKE])
    fig = charts.loss_curves(sources, tables.case_frame(sources))
    ax = fig.axes[0]
    ref = next(line for line in ax.get_lines() if "(reference" in str(line.get_label()))
    others = [line for line in ax.get_lines() if line is not ref and len(np.atleast_1d(line.get_xdata())) > 2]
    assert ref.get_linestyle() == "--" and all(ref.get_zorder() > o.get_zorder() for o in others)


def test_no_cuda_graphs_caption_without_a_graphs_case():
    df = case_table([case_row("s", "PT-AMP", 100.0, "pass"), case_row("s", "PT-FP32", 90.0, "reference")])
    captions = " ".join(caption for _, _, caption, _ in chart_jobs([], df, None, []))
    assert "CUDA graphs" not in captions.replace("With CUDA graphs, activations", "")
    df.loc[0, "graphs"] = True
    assert "Hatched: CUDA graphs" in " ".join(caption for _, _, caption, _ in chart_jobs([], df, None, []))
