"""Only cases that passed loss parity (and whose GEMMs ran in FP8) back a speed claim: the headline, where FP8
pays, the crossover and torchao against TE pick among them, and name a faster case that did not count."""

from __future__ import annotations

import math

import pandas as pd

from conftest import unsaid
from helpers.frame_rows import case_row, case_table
from tebench import report
from tebench.report import tables, why


def _size(size: str = "d2048", flops: float = 1e12, fp8: list[dict] | None = None) -> list[dict]:
    """A size with its reference (PT-FP32), the PT-AMP baseline at 100 ms, and the given FP8 cases."""
    return [case_row(size, "PT-FP32", 200.0, "reference", flops=flops),
            case_row(size, "PT-AMP", 100.0, "pass", rel=0.001, flops=flops), *(fp8 or [])]


FAIL = dict(variant="TE-FP8/delayed.HYBRID.h1024.max", ms=100 / 1.44, parity="fail", rel=-0.062, proof="fp8")
CAL = dict(variant="TE-FP8/delayed.HYBRID.h1024.max.cal8", ms=100 / 1.35, parity="pass", rel=0.004, proof="fp8")


def test_headline_picks_the_passing_case_and_names_the_failing_one_beside_it():
    df = case_table(_size(fp8=[case_row("d2048", **FAIL), case_row("d2048", **CAL)]))
    row = tables.headline(df).iloc[0]
    assert row["fastest"] == CAL["variant"] and row["best_fp8"] == CAL["variant"]
    assert math.isclose(row["speedup_vs_amp"], 1.35) and math.isclose(row["fp8_speedup_vs_amp"], 1.35)
    assert unsaid(row["faster_not_passing"], f"{FAIL['variant']} ×1.44", "fail", "-6.2%") == []
    # Shown in both report.md and index.html, as a column and in the sentence.
    ctx = report.parity_context(df, multi=False)
    for text in (ctx["headline"]["md"], ctx["headline"]["html"]):
        assert unsaid(text, "passed over", "parity", "FP8 proof", "×1.44", "fail", "-6.2%") == []
    assert unsaid(ctx["headline_sentences"][0], "passed over", "not counted", f"{FAIL['variant']} ×1.44") == []


def test_a_run_where_everything_counts_has_no_passed_over_column():
    df = case_table(_size(fp8=[case_row("d2048", **CAL)]))
    assert tables.headline(df)["faster_not_passing"].iloc[0] == ""
    ctx = report.parity_context(df, multi=False)
    assert "passed over" not in ctx["headline"]["md"] and "passed over" not in ctx["headline"]["html"]


def test_an_inconclusive_case_never_enters_even_when_fastest():
    inconclusive = dict(variant="TE-FP8/current.HYBRID", ms=60.0, parity="inconclusive", rel=1.147, proof="fp8")
    df = case_table(_size(fp8=[case_row("d2048", **inconclusive), case_row("d2048", **CAL)]))
    row = tables.headline(df).iloc[0]
    assert row["fastest"] == CAL["variant"] and row["best_fp8"] == CAL["variant"]
    assert unsaid(row["faster_not_passing"], "TE-FP8/current.HYBRID ×1.67", "inconclusive for the test",
                  "+114.7%") == []
    assert tables.fp8_pays(df).iloc[0]["best_fp8"] == CAL["variant"]


def test_a_partial_fp8_proof_never_enters_even_when_parity_passed():
    partial = dict(variant="TE-FP8/block.HYBRID", ms=50.0, parity="pass", rel=0.001, proof="partial")
    df = case_table(_size(fp8=[case_row("d2048", **partial), case_row("d2048", **CAL)]))
    row = tables.headline(df).iloc[0]
    assert row["best_fp8"] == CAL["variant"] and row["fastest"] == CAL["variant"]
    assert unsaid(row["faster_not_passing"], "TE-FP8/block.HYBRID ×2.00", "pass", "+0.1%", "partial") == []
    assert tables.fp8_pays(df).iloc[0]["best_fp8"] == CAL["variant"]


def test_which_verdicts_count():
    rows = [case_row("d2048", "PT-FP32", 200.0, "reference"), case_row("d2048", "PT-AMP", 100.0, "pass"),
            case_row("d2048", "PT-AMP+compile", 90.0, "fail"), case_row("d2048", "TE-BF16", 95.0, "inconclusive"),
            # n/a: by design for a data-parallel case, not where no reference ran.
            case_row("d2048", "PT-AMP/ddpx2", 60.0, "n/a", parallel="ddp", nproc=2),
            case_row("d2048", "TE-FP8/x", 70.0, "n/a"),
            # No verdict at all: a timing-only case (pytest-benchmark), never trained, so never judged.
            case_row("d2048", "TE-FP8/timing", 70.0, None, proof="unproven"),
            case_row("d2048", "TE-FP8/y", 70.0, "pass", proof="no-fp8")]
    df = pd.DataFrame(rows)
    got = dict(zip(df["variant"], tables.counts(df)))
    assert got == {"PT-FP32": True, "PT-AMP": True, "PT-AMP+compile": False, "TE-BF16": False,
                   "PT-AMP/ddpx2": True, "TE-FP8/x": False, "TE-FP8/timing": True, "TE-FP8/y": False}
    df.loc[1, "status"] = "failed"
    assert not tables.counts(df).iloc[1]


def test_where_fp8_pays_gives_a_size_whose_only_fp8_case_failed_a_note_and_no_bar():
    df = case_table(_size("d1024", 5e11, [case_row("d1024", **FAIL, flops=5e11)])
                + _size("d2048", 1e12, [case_row("d2048", **FAIL), case_row("d2048", **CAL)]))
    pays = tables.fp8_pays(df).set_index("size")
    assert math.isnan(pays.loc["d1024", "speedup_vs_amp"]) and pd.isna(pays.loc["d1024", "best_fp8"])
    assert unsaid(pays.loc["d1024", "note"], "not counted", f"{FAIL['variant']} ×1.44", "fail", "-6.2%") == []
    assert pays.loc["d2048", "best_fp8"] == CAL["variant"] and math.isclose(pays.loc["d2048", "speedup_vs_amp"], 1.35)
    bars = {b["label"]: b for b in report.pays_bars(tables.fp8_pays(df), multi=False)}
    none = bars["gpt/d1024"]
    assert none["width"] == 0.0 and none["variant"] == "–" and none["bar"].startswith("not counted: ")
    assert bars["gpt/d2048"]["width"] > 0 and "█" in bars["gpt/d2048"]["bar"]


def test_the_crossover_skips_cases_that_do_not_count():
    # The smaller size's only TE-FP8 case is ×1.44 faster but fails parity: the crossover is the larger size.
    df = case_table(_size("d1024", 5e11, [case_row("d1024", **FAIL, flops=5e11)])
                + _size("d2048", 1e12, [case_row("d2048", **FAIL), case_row("d2048", **CAL)]))
    cross = tables.crossover(df)
    amp = cross[(cross["baseline"] == "PT-AMP") & (cross["cuda_graphs"] == "off")].iloc[0]
    assert amp["fp8_first_faster_at"] == "d2048" and math.isclose(amp["speedup_there"], 1.35, rel_tol=0.01)
    assert unsaid(amp["speedup_by_size"], "d1024: not counted", "d2048: ×1.35") == []


def _why(step_ms: float, gemm_ms: float, fp8_step_ms: float, fp8_gemm_ms: float) -> pd.DataFrame:
    """A "why" frame of one size: PT-AMP and one proven TE-FP8 case, the other categories zero."""
    common = {"source": "H200", "workload": "gpt", "size": "d4096", "status": "ok", "attention": 0.0,
              "idle_ms": 0.0, "fp8_cast": 1.0, "norm": 0.0}
    return pd.DataFrame([
        {**common, "case_id": "gpt/d4096/PT-AMP", "mode": "PT-AMP", "fp8_proof": None, "step_ms": step_ms,
         "gemm_ms": gemm_ms},
        {**common, "case_id": "gpt/d4096/TE-FP8/x", "mode": "TE-FP8", "fp8_proof": "fp8", "step_ms": fp8_step_ms,
         "gemm_ms": fp8_gemm_ms},
    ])


def test_why_says_when_the_measured_speedup_exceeds_the_gemm_only_estimate():
    # GEMMs 72.2% of the step at twice the speed estimate ×1.56; ×1.59 was measured.
    text = why.sentences(_why(100.0, 72.2, 100 / 1.59, 36.1))[0]
    assert unsaid(text, "measured ×1.59", "exceeds", "estimate ×1.56", "GEMMs 72.2% of the step", "outside GEMMs") == []
    assert "at most" not in text and "Amdahl" not in text


def test_why_gives_the_estimate_as_an_estimate_when_measured_is_below_it():
    text = why.sentences(_why(100.0, 72.2, 100 / 1.40, 36.1))[0]
    assert unsaid(text, "×1.40 measured", "×1.56 estimated", "GEMMs 72.2% of the step") == []
    assert "exceeds" not in text and "at most" not in text
    # Equal as shown (×1.56 against ×1.56) is not "exceeds".
    assert "exceeds" not in why.gemm_estimate_words(1.5635, 1.5649, "72.2%")


def _why_rows(fp8: list[tuple[str, float, float]]) -> pd.DataFrame:
    """A "why" frame of one size: PT-AMP at 100 ms (72.2 ms of GEMMs) and proven TE-FP8 cases (variant, step, GEMM)."""
    common = {"source": "H200", "workload": "gpt", "size": "d2048", "status": "ok", "attention": 0.0,
              "idle_ms": 0.0, "fp8_cast": 1.0, "norm": 0.0}
    return pd.DataFrame([
        {**common, "case_id": "gpt/d2048/PT-AMP", "mode": "PT-AMP", "fp8_proof": None, "step_ms": 100.0,
         "gemm_ms": 72.2},
        *({**common, "case_id": f"gpt/d2048/{v}", "mode": "TE-FP8", "fp8_proof": "fp8", "step_ms": ms, "gemm_ms": g}
          for v, ms, g in fp8)])


def test_why_describes_the_passing_fp8_case_and_names_the_faster_failing_one():
    cases = case_table(_size(fp8=[case_row("d2048", **FAIL), case_row("d2048", **CAL)]))
    frame = _why_rows([(FAIL["variant"], 100 / 1.44, 36.0), (CAL["variant"], 100 / 1.35, 37.0)])
    text = why.sentences(why.with_parity(frame, cases))[0]
    assert f"{CAL['variant']} made the GEMMs" in text
    assert f"{FAIL['variant']} made the GEMMs" not in text
    assert unsaid(text, "not counted", f"{FAIL['variant']} ×1.44", "fail", "-6.2%") == []
    # Through the report's context, as the section shows it.
    from tebench.schema import kernel_rules
    full = frame.assign(mem_peak=None, **{k: 0.0 for k, _, _ in kernel_rules.CATEGORIES if k not in frame})
    ctx = report.why_context(full, multi=False, df=cases)
    assert ctx["why_sentences"] == [text]


def test_why_says_so_when_no_fp8_case_counts_and_describes_none():
    inconclusive = dict(variant="TE-FP8/current.HYBRID", ms=100 / 1.59, parity="inconclusive", rel=1.147,
                        proof="fp8")
    cases = case_table(_size(fp8=[case_row("d2048", **FAIL), case_row("d2048", **inconclusive)]))
    frame = _why_rows([(FAIL["variant"], 100 / 1.44, 36.0), (inconclusive["variant"], 100 / 1.59, 36.1)])
    text = why.sentences(why.with_parity(frame, cases))[0]
    assert "made the GEMMs" not in text and "estimate" not in text and "The other library" not in text
    assert unsaid(text, "No FP8 case passed parity", "TE-FP8/current.HYBRID ×1.59", "inconclusive", "+114.7%") == []


def test_every_variant_view_keeps_and_marks_the_cases_that_do_not_count():
    from tebench.report import charts
    df = case_table(_size(fp8=[case_row("d2048", **FAIL), case_row("d2048", **CAL)]))
    lines = report.speedup_bars(df, multi=False)[0]["lines"]
    failing = [line for line in lines if line.startswith(FAIL["variant"] + " ")]
    assert len(failing) == 1 and unsaid(failing[0], "✗", "parity", "(fail)") == []
    assert not any("✗" in line for line in lines if not line.startswith(FAIL["variant"] + " "))
    fig = charts.speedup(df)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    alphas = dict(zip(labels, (bar.get_alpha() for bar in ax.patches)))
    assert alphas["✗ " + FAIL["variant"]] == charts.NOT_COUNTED_ALPHA and alphas[CAL["variant"]] is None
    assert charts.NOT_COUNTED in fig._suptitle.get_text()


def test_the_scaling_charts_fp8_line_takes_only_cases_that_count():
    from tebench.report import charts
    df = case_table(_size("d1024", 5e11, [case_row("d1024", **FAIL, flops=5e11)])
                + _size("d2048", 1e12, [case_row("d2048", **FAIL), case_row("d2048", **CAL)]))
    df["workload"] = "gpt"
    df["tokens_per_s"], df["mfu"] = 1000.0, 0.5
    fig = charts.scaling(df)
    line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("TE-FP8"))
    ys = list(line.get_ydata())
    # d1024's only TE-FP8 case fails: a gap; d2048's line point is the passing case, not the faster failing one.
    assert math.isnan(ys[0]) and math.isclose(ys[1], CAL["ms"])


def test_the_frame_rule_and_the_record_rule_are_one_rule():
    """tables.counts (vectorized, for reports) and parity.counts_for_speed (one record, for the gate) agree on
    every combination of what they read, so the report and compare can never disagree on what counts."""
    import itertools

    from tebench.analysis import parity

    combos = list(itertools.product(["ok", "failed"], [None, "pass", "reference", "fail", "inconclusive", "n/a"],
                                    [None, "fp8", "unproven", "partial", "no-fp8"], [("single", 1), ("ddp", 2)]))
    frame = pd.DataFrame([{"status": st, "parity": v, "fp8_proof": p, "parallel": par, "nproc": n}
                          for st, v, p, (par, n) in combos])
    by_frame = tables.counts(frame).tolist()
    by_record = [parity.counts_for_speed({"status": st, "parity": {"verdict": v}, "fp8_proof": {"verdict": p},
                                          "case": {"parallel": par, "nproc": n}})[0]
                 for st, v, p, (par, n) in combos]
    assert by_frame == by_record
