"""The first screen of runs side by side names the cases whose verdict moved between them."""

from __future__ import annotations

import warnings

from conftest import FIXTURES, ROOT
from tebench.report.context import moved_context
from tebench.report.load import load_all

NIGHTS = ROOT / "reports" / "h100-nightly-87e902b"


def _load(*paths):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # stored files judged again: not what these tests are about
        return load_all(list(paths))


def test_two_nights_of_one_commit_name_the_one_case_whose_verdict_moved():
    assert moved_context(_load(NIGHTS / "night1.jsonl.gz", NIGHTS / "night2.jsonl.gz")) == {
        "judged_in_several": 40,
        "moved_verdicts": [{"case": "llama/d4096-l4/AO-FP8/tensorwise",
                            "verdicts": "pass (NVIDIA H100 80GB HBM3, night1.jsonl.gz) · "
                                        "fail (NVIDIA H100 80GB HBM3, night2.jsonl.gz)"}]}


def test_a_case_whose_settings_differ_between_the_runs_is_not_counted_as_moved():
    # The tutorial matrix trains gpt/tutorial other settings than the nightly's: other benchmarks, not a move.
    power = ROOT / "reports" / "h200-verdict-power"
    assert moved_context(_load(power / "nightly.jsonl.gz", power / "tutorial.jsonl.gz"))["moved_verdicts"] == []


def test_one_run_has_no_moved_line():
    assert moved_context(_load(FIXTURES / "cpu-smoke.jsonl")) == {"judged_in_several": 0, "moved_verdicts": []}
