"""The loss-parity verdicts that moved between runs: one rule for the report's runs side by side and the history."""

from __future__ import annotations

import copy
import warnings

from conftest import FIXTURES, ROOT, read_jsonl, write_jsonl
from tebench import cli
from tebench.analysis import judged_run, verdict_moves

AMP = "gpt/tiny/PT-AMP"


def _run(tmp_path, name: str, verdicts: dict[int, str], steps: int | None = None):
    """The CPU fixture's records with PT-AMP's stored verdict per round, read as stored (not judged again)."""
    out = []
    for r in read_jsonl(FIXTURES / "cpu-smoke.jsonl"):
        if r.get("case_id") == AMP:
            for rnd, verdict in verdicts.items():
                rec = copy.deepcopy(r)
                rec["round"], rec["parity"] = rnd, {"verdict": verdict, "reason": "test"}
                if steps is not None:
                    rec["case"]["settings"]["steps"] = steps
                out.append(rec)
        else:
            out.append(r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return name, judged_run.read(write_jsonl(tmp_path / f"{name}.jsonl", out), judge=False).cases


def test_a_runs_verdict_is_its_worst_round_and_only_a_difference_between_runs_is_a_move(tmp_path):
    common, moved = verdict_moves.moved([_run(tmp_path, "n1", {0: "pass", 1: "inconclusive", 2: "pass"}),
                                         _run(tmp_path, "n2", {0: "pass"}), _run(tmp_path, "n3", {0: "pass"})])
    assert common >= 1 and [(m.case_id, m.verdicts) for m in moved] == [
        (AMP, [("n1", "inconclusive"), ("n2", "pass"), ("n3", "pass")])]
    # Rounds that disagree within one run, and the same worst verdict in every run: nothing moved.
    assert verdict_moves.moved([_run(tmp_path, "a", {0: "pass", 1: "fail"}), _run(tmp_path, "b", {0: "fail"})])[1] == []


def test_a_run_of_other_settings_is_another_benchmark_not_a_move(tmp_path):
    long = _run(tmp_path, "long", {0: "fail"}, steps=999)
    assert next(r for r in long[1] if r.case_id == AMP).case.settings.steps == 999
    assert AMP not in [m.case_id for m in verdict_moves.moved([_run(tmp_path, "short", {0: "pass"}), long])[1]]
    same = _run(tmp_path, "same", {0: "fail"})
    assert [m.case_id for m in verdict_moves.moved([_run(tmp_path, "short", {0: "pass"}), same])[1]] == [AMP]


def test_the_stored_h100_nights_list_the_ao_fp8_case_that_moved_in_the_report_and_the_history(tmp_path):
    nights = [ROOT / "reports" / "h100-nightly-87e902b" / f"{n}.jsonl.gz" for n in ("night1", "night2")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        common, moved = verdict_moves.moved([(p.name, judged_run.read(p).cases) for p in nights])
    assert common == 40 and [(m.case_id, m.verdicts) for m in moved] == [
        ("llama/d4096-l4/AO-FP8/tensorwise", [("night1.jsonl.gz", "pass"), ("night2.jsonl.gz", "fail")])]
    db = tmp_path / "h.db"
    for path in nights:
        assert cli.main(["history", "add", "--db", str(db), str(path)]) == 0
    assert cli.main(["history", "report", "--db", str(db), "--out", str(tmp_path / "page")]) == 0
    page = (tmp_path / "page" / "history.md").read_text()
    assert "**Loss-parity verdicts that moved** over each device's last 6 runs at most (1 case(s))" in page
    assert ("| NVIDIA H100 80GB HBM3 | llama/d4096-l4/AO-FP8/tensorwise | pass · fail | fail | 1 of 2 as the latest "
            "| 87e902b |") in page
    assert "Loss-parity verdicts that moved (1)" in (tmp_path / "page" / "history.html").read_text()
