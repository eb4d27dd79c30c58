"""The report's numbers never contradict their words: no "saved" that is negative, no case compared with itself,
no headline speedup that its own spread cannot support, and a flag on every median its spread swamps."""

from __future__ import annotations

import pandas as pd

from conftest import unsaid
from helpers.frame_rows import case_row, case_table
from tebench.report import same_as_baseline, table_context, tables


def test_the_headline_memory_column_is_a_signed_change():
    df = case_table([case_row("s", "PT-AMP", 100.0, "pass"), case_row("s", "PT-FP32", 90.0, "reference")])
    head = tables.headline(df).iloc[0]
    assert head["fastest"] == "PT-FP32" and abs(head["memory_change"] - (-0.10)) < 1e-9
    assert tables.fmt(head["memory_change"], "change") == "−10%"
    assert tables.fmt(0.019, "change") == "+1.9%"  # used more: "+", never "memory saved -1.9%"


def test_a_case_is_never_compared_with_itself():
    df = case_table([case_row("s", "PT-FP32", 200.0, "reference"), case_row("s", "PT-AMP", 100.0, "pass"),
                 case_row("s", "PT-AMP+compile", 120.0, "pass")])
    head = same_as_baseline(tables.headline(df), "fastest", [(tables.BASELINE, "speedup_vs_amp"),
                                                              (tables.BASELINE, "memory_change")])
    shown = tables.formatted(head, [("speedup_vs_amp", "vs", "x"), ("memory_change", "memory", "change")])
    assert shown.iloc[0].tolist() == ["=", "="]  # not "×1.00, 0.0%"
    cases = table_context(df.assign(gpu_busy=None, bound=None), [], False, pd.DataFrame())["cases"]["frame"]
    by_case = cases.set_index("case")
    assert by_case.loc["gpt/s/PT-AMP", f"vs {tables.BASELINE}"] == "="
    assert by_case.loc["gpt/s/PT-AMP+compile", f"vs {tables.COMPILED}"] == "="
    assert by_case.loc["gpt/s/PT-AMP+compile", f"vs {tables.BASELINE}"] == "×0.83"


def test_a_cpu_headline_within_its_spread_says_within_noise():
    # The "PT-FP32 ×7.18" of a loaded CPU: PT-AMP's steps scattered over most of their median.
    # Half its steps ran as fast as PT-FP32's, half behind other jobs: the median falls in between.
    amp = case_row("s", "PT-AMP", 824.0, "pass")
    amp["samples_ms"] = [[100.0 + k for k in range(15)] + [824.0] + [1500.0 + k for k in range(14)]]
    amp["iqr_ms"] = 581.0
    df = case_table([amp, case_row("s", "PT-FP32", 115.0, "reference", spread=0.02)])
    head = tables.headline(df).iloc[0]
    assert round(head["speedup_vs_amp"], 2) == 7.17
    assert head["fastest"] == "PT-FP32" and head["noise"] == "within noise"


def test_a_median_its_spread_swamps_is_flagged():
    # distill PT-FP32 38.2 ms with an IQR of 449.7 ms: the median says little.
    rows = [case_row("s", "PT-AMP", 40.0, "pass"), case_row("s", "PT-FP32", 38.2, "reference")]
    rows[1]["iqr_ms"] = 449.7
    df = case_table(rows)
    assert int(tables.noisy(df).sum()) == 1
    ctx = table_context(df.assign(gpu_busy=None, bound=None), [], False, pd.DataFrame())
    flagged = ctx["cases"]["frame"].set_index("case")["noise"]
    assert flagged["gpt/s/PT-FP32"] == "IQR > median" and flagged["gpt/s/PT-AMP"] == "" and ctx["n_noisy"] == 1
    quiet = table_context(case_table(rows[:1]).assign(gpu_busy=None, bound=None), [], False, pd.DataFrame())
    assert "noise" not in quiet["cases"]["frame"].columns  # no flag, no column


def test_gemms_that_got_slower_are_never_called_faster():
    # Once: "made the GEMMs ×0.98 faster (1.11 → 1.13 ms)".
    from tebench.report import why
    from test_counts_only_passing import _why

    text = why.sentences(_why(10.0, 1.11, 9.9, 1.13))[0]
    assert unsaid(text, "GEMMs", "×1.02 slower", "1.11 → 1.13 ms") == [] and "×0.98 faster" not in text, text
    assert why.faster_words(1.2) == "×1.20 faster" and why.faster_words(1.001) == "no faster"


def test_the_library_with_no_passing_variant_is_the_one_named():
    # TE-FP8 passed, every AO-FP8 variant failed: the sentence names torchao, and compares nothing.
    from tebench.report import sentence

    df = case_table([case_row("s", "PT-FP32", 200.0, "reference"), case_row("s", "PT-AMP", 100.0, "pass"),
                 case_row("s", "TE-FP8/current", 70.0, "pass", proof="fp8"),
                 case_row("s", "AO-FP8/tensorwise", 60.0, "fail", proof="fp8")])
    text = sentence(tables.headline(df).iloc[0])
    assert "no AO-FP8 variant" in text and "no TE-FP8 variant" not in text, text
    assert "vs AO-FP8" not in text and "fastest is TE-FP8/current" in text


def test_an_environment_cell_ends_at_a_word():
    from tebench.report import clip_words

    stored = ("580.159.04 / 13.0 / unusable by torch: cuDNN version incompatibility: PyTorch was compiled  against "
              "(9, 19, 0) but found runtime version (9, 14, 0). PyTorch already comes bundled with cuDNN. One option "
              "to resolving this error is to ensure PyTorch can find the bundled cuDNN. one possibility is that "
              "there is a conflicting cuDNN in LD_LIBRA")
    shown = clip_words(stored)
    assert shown.endswith(" …") and "LD_LIBRA" not in shown and len(shown) <= 202
    assert stored.startswith(shown[:-2]) and shown[-3] != " "
    assert clip_words("580.159.04 / 13.0 / 9.14") == "580.159.04 / 13.0 / 9.14"


def test_files_from_one_machine_are_named_by_file_not_run_id(tmp_path):
    from conftest import FIXTURES
    from tebench.report import load
    import shutil

    a, b = tmp_path / "a" / "results.jsonl", tmp_path / "d4096.jsonl"
    a.parent.mkdir()
    shutil.copy(FIXTURES / "cpu-smoke.jsonl", a)
    shutil.copy(FIXTURES / "cpu-smoke.jsonl", b)
    labels = [s.label for s in load.load_all([a, b])]
    assert labels == ["CPU (AMD EPYC), a/results.jsonl", "CPU (AMD EPYC), d4096.jsonl"]


def test_the_memory_tables_fp8_weights_column_says_when_it_is_non_zero(tmp_path):
    from conftest import ROOT
    from tebench.report import render

    out = render([ROOT / "reports" / "h200-nightly-energy" / "results.jsonl"], tmp_path / "r")
    for text in ((out / "report.md").read_text(), (out / "index.html").read_text()):
        assert unsaid(text, "FP8 weights", "copies", "transposes", "non-zero only") == []
