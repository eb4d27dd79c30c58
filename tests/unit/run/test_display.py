"""The progress lines of a run: ``[i/n]`` in one column."""

from __future__ import annotations

import io

from tebench.run.display import Display
from tebench.schema.records import CaseResult


def _record(round_: int) -> CaseResult:
    return CaseResult.from_dict({"type": "case", "status": "skipped", "case_id": "gpt/micro/PT-FP32", "round": round_,
                                 "reason": "test", "case": {"workload": "gpt", "size": "micro", "mode": "PT-FP32",
                                                            "dims": {}}})


def _lines(total: int, records: list[CaseResult] | None = None) -> list[str]:
    stream = io.StringIO()
    display = Display(total, live=False, stream=stream)
    for record in records or [_record(0)] * total:
        display.finish(record)
    return stream.getvalue().splitlines()


def test_the_index_is_padded_to_the_width_of_the_total():
    lines = _lines(19)
    assert lines[8].startswith("[ 9/19] ") and lines[9].startswith("[10/19] "), lines
    assert len({line.index("] ") for line in lines}) == 1, lines


def test_the_live_line_is_padded_too():
    stream = io.StringIO()
    display = Display(19, live=True, stream=stream)
    display.update("k", "gpt/micro/PT-FP32", "measure", 1, 5)
    assert "[ 1/19] gpt/micro/PT-FP32" in stream.getvalue()
