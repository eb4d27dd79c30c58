"""Suggestions for a mistyped preset or --only glob name what was meant."""

from __future__ import annotations

import pytest

from tebench.plan import matrix, schedule


def test_a_mistyped_preset_gets_a_did_you_mean():
    with pytest.raises(matrix.MatrixError, match="did you mean 'nightly'"):
        matrix.preset_path("nightyl")
    with pytest.raises(matrix.MatrixError) as err:
        matrix.preset_path("zzzz")
    assert "did you mean" not in str(err.value) and "known: auto, crossover" in str(err.value)


def test_only_suggestions_rank_ids_of_the_mode_that_was_meant():
    cases = list(matrix.iter_cases(matrix.load("nightly", is_preset=True)))
    line = schedule.unmatched_only(cases, ["gpt/*/TE-FP9*"])[0]
    close = line.split("close case ids: ")[1].split(";")[0].split(", ")
    assert len(close) == 3 and all("/TE-FP8/" in cid for cid in close), close
    assert schedule.closest_ids("gpt/tutorial/PT_AMP", [c.id for c in cases])[0] == "gpt/tutorial/PT-AMP"


def test_an_only_glob_that_names_excluded_cases_names_the_rule_that_removed_them():
    """It said only "no case matches", with close ids, as if the id were mistyped."""
    mat = matrix.load("smoke", is_preset=True)
    expansion = matrix.expand(mat)
    lines = schedule.unmatched_only(expansion.cases, ["distill/*/PT-AMP+compile"], expansion.excluded)
    assert len(lines) == 1 and "excluded by the matrix's [[exclude]] rule workload=distill mode=PT-AMP+compile" \
        in lines[0], lines
    assert "excluded by" not in schedule.unmatched_only(expansion.cases, ["gpt/tiny/PT-AMPP"], expansion.excluded)[0]
