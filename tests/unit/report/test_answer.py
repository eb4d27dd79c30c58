"""The first screen: per workload, the fastest passing configuration per size, in a table narrow enough for a PR
comment; its numbers never contradict themselves (no self-ratio, no negative saving, no speedup within noise)."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import ROOT
from helpers.frame_rows import case_row, case_table
from tebench.report import answer, answer_context, load, tables

SHOWCASE = ROOT / "reports" / "h200-nightly-energy" / "results.jsonl"


@pytest.fixture(scope="module")
def showcase() -> pd.DataFrame:
    return tables.case_frame(load.load_all([SHOWCASE]))


def test_the_showcase_first_screen_fits_a_pr_comment(showcase):
    tables_md = answer_context(showcase, multi=False)["answer"]
    assert [t["title"] for t in tables_md] == ["gpt", "distill", "llama"]
    for t in tables_md:
        header = t["md"].splitlines()[0]
        assert header.count("|") - 1 <= answer.MAX_COLUMNS
        assert answer.md_width(t["md"]) <= answer.MD_WIDTH, t["md"]
        assert "mJ/token" in header  # the H200 nightly measured energy


def test_the_showcase_picks_only_passing_configurations(showcase):
    picked = answer.frame(showcase)
    counted = showcase[tables.counts(showcase)]
    assert picked
    for row in picked:
        pool = counted[(counted["workload"] == row.workload) & (counted["size"] == row.size)
                       & (counted["parallel"] == "single")]
        assert row.pick == pool.loc[pool["median_ms"].idxmin(), "variant"]
        assert row.parity in ("pass", "reference")
    d2048 = next(r for r in picked if (r.workload, r.size) == ("gpt", "d2048"))
    # No FP8 case passes there (the reference is still above the unigram entropy: too early to judge): the
    # reference is picked, and the fastest FP8 variant is named below the table with why, never picked.
    assert d2048.pick == "PT-AMP"
    assert "delayed.HYBRID.h1024.max ×1.44 (inconclusive: too early, the reference above the unigram entropy" in d2048.passed_over


def test_a_baseline_pick_shows_no_ratio_to_itself():
    df = case_table([case_row("s", "PT-FP32", 200.0, "reference"), case_row("s", "PT-AMP", 100.0, "pass"),
                 case_row("s", "PT-AMP+compile", 120.0, "pass")])
    shown = answer.display(answer.frame(df), energy=False).iloc[0]
    assert shown["fastest passing"] == "PT-AMP"
    assert (shown["vs AMP"], shown["memory"]) == ("=", "=")  # never "×1.00, 0.0%"
    assert shown["vs compile"] == "×1.20" and shown["verdict"] == "pass"


def test_memory_and_energy_are_signed_changes_never_a_negative_saving():
    df = case_table([case_row("s", "PT-AMP", 100.0, "pass", tokens_per_j=1000.0),
                 case_row("s", "PT-FP32", 90.0, "reference", tokens_per_j=500.0)])
    shown = answer.display(answer.frame(df), energy=True).iloc[0]
    assert shown["fastest passing"] == "PT-FP32"
    assert shown["memory"] == "−10%"  # 0.9 GB against 1 GB
    assert shown["mJ/token"] == "2 +100%"  # 2 mJ against PT-AMP's 1 mJ per token
    assert answer.change_text(0.019) == "+1.9%" and answer.change_text(-0.0001) == "±0%"


def test_a_lead_whose_interval_includes_one_is_within_noise():
    # A CPU-like pair: the medians say ×1.25, but each side's steps scatter ±40%: the interval spans ×1.
    df = case_table([case_row("s", "PT-AMP", 100.0, "pass", spread=0.2), case_row("s", "PT-FP32", 80.0, "reference", spread=0.2)])
    best, base = df[df["variant"] == "PT-FP32"].iloc[0], df[df["variant"] == "PT-AMP"].iloc[0]
    lo, hi = tables.speedup_interval(best, base)
    assert lo <= 1.0 <= hi
    shown = answer.display(answer.frame(df), energy=False).iloc[0]
    # The noise judgement stands beside the ratio it qualifies; the verdict column is loss parity alone.
    assert shown["vs AMP"].endswith("(noise)") and shown["verdict"] == "reference"
    # The interval alone decides where the IQR rule would let the lead stand (a spread it cannot see).
    quiet_best, quiet_base = best.copy(), base.copy()
    quiet_best["iqr_ms"] = quiet_base["iqr_ms"] = 0.1
    assert tables.within_noise(quiet_best, quiet_base) == "within noise"
    tight = case_table([case_row("s", "PT-AMP", 100.0, "pass"), case_row("s", "PT-FP32", 80.0, "reference")])
    assert answer.display(answer.frame(tight), energy=False).iloc[0]["verdict"] == "reference"


def test_a_size_where_nothing_passed_says_so():
    # Beside a size where something passed: pandas then holds the empty pick as NaN, never shown as "nan".
    df = case_table([case_row("t", "PT-FP32", 200.0, "reference"), case_row("t", "PT-AMP", 100.0, "pass"),
                 case_row("s", "PT-FP32", 200.0, "inconclusive"), case_row("s", "PT-AMP", 100.0, "fail"),
                 case_row("s", "TE-FP8/current", 70.0, "fail", proof="fp8")])
    shown = answer.display(answer.frame(df), energy=False).set_index("size").loc["s"]
    assert (shown["fastest passing"], shown["vs AMP"], shown["verdict"]) == ("–", "–", "none passed")


def test_md_width_counts_what_a_cell_shows():
    md = "| a | b |\n|---|---|\n| x\\|y | &lt;z |"
    assert answer.md_width(md) == (3 + answer.CELL_PAD) + (2 + answer.CELL_PAD)


def test_a_timing_with_no_loss_curve_says_timing_only():
    from conftest import FIXTURES

    df = tables.case_frame(load.load_all([FIXTURES / "h200-modules-benchmark.json"]))
    shown = answer.display(answer.frame(df), energy=False)
    assert set(shown["verdict"]) == {"timing only"} and "nan" not in shown.to_string()


def test_a_ratio_inside_its_samples_spread_is_flagged_whatever_its_size():
    """A loaded CPU: PT-AMP's steps ranged 12-532 ms around a 428 ms median; x43.55 must not stand unflagged."""
    amp = case_row("s", "PT-AMP", 428.0, "pass")
    amp["samples_ms"] = [[11.0, 12.0] + [428.0] * 26 + [532.0, 540.0]]
    amp["iqr_ms"] = 222.0
    compiled = case_row("s", "PT-AMP+compile", 428.0 / 43.55, "pass")
    df = case_table([amp, compiled])
    best = df[df["variant"] == "PT-AMP+compile"].iloc[0]
    base = df[df["variant"] == "PT-AMP"].iloc[0]
    assert tables._sample_spread(base) > abs(__import__("math").log(43.55))
    assert tables.within_noise(best, base) == "within noise"
    assert answer.display(answer.frame(df), energy=False).iloc[0]["vs AMP"].endswith("(noise)")
    # A quiet pair keeps its ratio unflagged: one stray slow step does not make the lead noise.
    quiet = case_row("s", "PT-AMP", 100.0, "pass")
    quiet["samples_ms"] = [[100.0] * 29 + [400.0]]  # one collector pause among 30 steps
    fast = case_row("s", "TE-BF16", 70.0, "pass")
    df = case_table([quiet, fast])
    assert not tables.within_noise(df[df["variant"] == "TE-BF16"].iloc[0], df[df["variant"] == "PT-AMP"].iloc[0])
