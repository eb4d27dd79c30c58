"""The progress lines of a run: ``[i/n]`` in one column, and rounds counted as a person counts them (k/N)."""

from __future__ import annotations

import io
import re
import textwrap

from conftest import MICRO_GPT
from tebench.run.display import Display, summary_line
from tebench.schema.records import CaseResult


def _skipped_record(round_: int) -> CaseResult:
    return CaseResult.from_dict({"type": "case", "status": "skipped", "case_id": "gpt/micro/PT-FP32", "round": round_,
                                 "reason": "test", "case": {"workload": "gpt", "size": "micro", "mode": "PT-FP32",
                                                            "dims": {}}})


def _display_lines(total: int, rounds: int = 1, records: list[CaseResult] | None = None) -> list[str]:
    stream = io.StringIO()
    display = Display(total, live=False, stream=stream, rounds=rounds)
    for record in records or [_skipped_record(0)] * total:
        display.finish(record)
    return stream.getvalue().splitlines()


def test_the_index_is_padded_to_the_width_of_the_total():
    lines = _display_lines(19)
    assert lines[8].startswith("[ 9/19] ") and lines[9].startswith("[10/19] "), lines
    assert len({line.index("] ") for line in lines}) == 1, lines


def test_the_live_line_is_padded_too():
    stream = io.StringIO()
    display = Display(19, live=True, stream=stream)
    display.update("k", "gpt/micro/PT-FP32", "measure", 1, 5)
    assert "[ 1/19] gpt/micro/PT-FP32" in stream.getvalue()


def test_rounds_are_counted_from_one_of_all():
    lines = _display_lines(3, rounds=3, records=[_skipped_record(r) for r in range(3)])
    assert [re.findall(r"\(round [^)]*\)", line) for line in lines] == [
        ["(round 1/3)"], ["(round 2/3)"], ["(round 3/3)"]], lines


def test_one_round_is_not_named():
    assert "round" not in summary_line(_skipped_record(0)) and "round" not in _display_lines(1)[0]


def test_a_run_of_several_rounds_prints_them_as_ab_does(tmp_path, stub_cli):
    matrix = tmp_path / "m.toml"
    matrix.write_text(textwrap.dedent("""
        name = "rounds"
        [settings]
        steps = 3
        warmup = 1
        [axes]
        modes = ["PT-FP32", "PT-AMP"]
        """) + MICRO_GPT)
    proc = stub_cli("run", str(matrix), "--out", str(tmp_path / "run"), "--rounds", "5", "--no-report", "--quiet",
                    check=True)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 10 and lines[0].startswith("[ 1/10] ") and lines[-1].startswith("[10/10] "), proc.stderr
    assert len({line.index("] ") for line in lines}) == 1, lines
    for k in range(1, 6):
        assert sum(f"(round {k}/5)" in line for line in lines) == 2, lines


def test_each_finished_case_says_how_far_the_run_is_and_what_is_left(monkeypatch):
    """The whole run's progress: elapsed, and what is left at the pace so far, weighted by the cases' costs."""
    clock = iter([0.0, 10.0, 20.0, 30.0])
    monkeypatch.setattr("tebench.run.display.time.monotonic", lambda: next(clock))
    stream = io.StringIO()
    costs = {("gpt/micro/PT-FP32", 0): 1.0, ("gpt/micro/PT-FP32", 1): 3.0, ("gpt/micro/PT-FP32", 2): 0.0}
    display = Display(3, live=False, stream=stream, rounds=3, costs=costs)
    for r in range(3):
        display.finish(_skipped_record(r))
    lines = stream.getvalue().splitlines()
    # After a case of cost 1 in 10 s, 3 of cost are left: ~30 s.
    assert lines[0].endswith(" · run 10s, ~30s left"), lines
    assert lines[1].endswith(" · run 20s"), lines  # all the cost is done: nothing left to estimate
    assert lines[2].endswith(" · run 30s"), lines


def test_durations_read_as_a_person_writes_them():
    from tebench.run.display import duration
    assert [duration(s) for s in (4.6, 192, 7500)] == ["5s", "3m12s", "2h05m"]


def test_a_reason_of_several_lines_shows_them_under_the_case_escaped_line_by_line():
    """A dead worker's reason carries its log's last lines: printed escaped on one line ("\\x0a") they were
    unreadable; each shows on its own indented line, a control character in one still escaped."""
    record = CaseResult.from_dict({"type": "case", "status": "failed", "case_id": "gpt/micro/PT-AMP", "round": 0,
                                   "reason": "worker died with signal 11 (SIGSEGV) before writing a result; the end "
                                             "of its log, logs/x.log:\n# first line\nsecond \x1b[31mline",
                                   "case": {"workload": "gpt", "size": "micro", "mode": "PT-AMP", "dims": {}}})
    lines = _display_lines(1, records=[record])
    assert len(lines) == 3 and "\\x0a" not in "".join(lines), lines
    assert lines[0].endswith("logs/x.log:") and lines[1] == "      # first line", lines
    assert lines[2].startswith("      second ") and "\x1b" not in lines[2], lines
