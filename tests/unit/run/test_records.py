"""The runner's record of a case: built, judged and written as typed parts, line for line as before.

Before the parts were produced directly, the executor turned the built record into a dict, judged
the dict and appended the verdict as its last key. The line it writes now must be that same line.
"""

from __future__ import annotations

import dataclasses
import io
import json

from helpers.executors import KeptLines, build_executor
from tebench.analysis import parity
from tebench.schema.environment import Environment
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.plan.schedule import Planned
from tebench.run import executor
from tebench.run.display import Display
from tebench.run.record_builder import build_record
from tebench.schema.records import CaseResult, Measurements
from tebench.workloads import SPECS

ENV = Environment(device_type="cpu")
SIZE = SPECS["gpt"].size_type(vocab=32, d_model=64, heads=4, layers=2, ffn=128, seq=32, batch=16)


def _forty_step_case(mode: str) -> Case:
    return Case(workload="gpt", size="tiny", mode=mode, dims=dataclasses.asdict(SIZE),
                settings=Settings(steps=40, warmup=0, lr=3e-3, profile_steps=0))


def _measured(end: float, status: str = "ok") -> Measurements:
    losses = [4.0 * (end / 4.0) ** (i / 39) for i in range(40)]
    return Measurements.from_dict({"status": status, "device": {"type": "cpu", "name": "cpu"},
                                   "loss": {"per_step": losses, "warmup_steps": 0},
                                   "timing": {"samples_ms": [10.0, 12.0, 11.0, 10.5], "timer": "perf_counter"},
                                   "validation": {"metric": "greedy_accuracy", "kind": "accuracy", "count": 16,
                                                  "greedy_accuracy": 0.9}})


def _as_before(p: Planned, raw: Measurements, judged: list[dict]) -> str:
    """The line the executor wrote before: the record as a dict, judged as a dict, its verdict appended."""
    rec = build_record(p, raw, ENV, "run-1", 0.0, 1.0, "logs/x.log").to_dict()
    if rec.get("loss") and rec["status"] in ("ok", "diverged"):
        typed = CaseResult.from_dict(rec)
        verdict = parity.judge([CaseResult.from_dict(d) for d in judged] + [typed], typed)
        rec["parity"] = verdict.to_dict()
    judged.append(rec)
    return json.dumps(rec)


def test_the_runner_writes_each_record_as_before(monkeypatch, tmp_path):
    # One clock for both builds: the start time is written as text.
    monkeypatch.setattr(executor.time, "time", lambda: 1.0)
    planned = [(Planned(_forty_step_case("PT-FP32"), 0, None), _measured(1.0)),
               (Planned(_forty_step_case("PT-AMP"), 0, None), _measured(1.02)),
               (Planned(_forty_step_case("TE-BF16"), 0, None), _measured(2.5)),
               (Planned(_forty_step_case("PT-AMP"), 1, None), Measurements(status="failed", reason="worker died"))]
    lines = KeptLines()
    ex = build_executor(tmp_path, env=ENV, writer=lines, display=Display(3, live=False, stream=io.StringIO()))
    before: list[dict] = []
    for p, raw in planned:
        ex.record(p, raw, 0.0, "logs/x.log")
        assert lines.lines[-1] == _as_before(p, raw, before)
    verdicts = [r.verdict for r in ex.records]
    assert verdicts == ["reference", "pass", "fail", None]
    assert list(CaseResult.from_dict(json.loads(lines.lines[1])).to_dict())[-1] == "parity"
