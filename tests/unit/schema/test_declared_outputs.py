"""What the analysis writes into a record is declared: no statistic lands silently in a part's ``extra``.

Parity, the step-time summary and throughput are computed as dicts and stored as record parts; a
key the part does not declare would be kept (unknown keys ride along) but never validated,
documented or read by name. These tests judge stored runs of every rule and check each key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import read_jsonl
from tebench.analysis import parity
from tebench.schema.environment import PeakRates
from tebench.schema.records import CaseResult, Parity, Summary, Throughput

ROOT = Path(__file__).resolve().parents[3]
RUNS = [ROOT / "reports" / "h200-nightly-energy" / "results.jsonl",  # equivalence rule, energy
        ROOT / "reports" / "h200-verdict-mutations" / "context-run.jsonl.gz",  # structural and context fails
        ROOT / "tests" / "fixtures" / "h200-crossover.jsonl",  # band rule
        ROOT / "tests" / "fixtures" / "cpu-smoke.jsonl"]


def _judged_cases(path: Path) -> list[CaseResult]:
    records = read_jsonl(path)
    cases = [CaseResult.from_dict(r) for r in records if r.get("type") == "case"]
    parity.attach(cases)
    return cases


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_parity_key_is_declared(path):
    verdicts = [r.parity for r in _judged_cases(path) if r.parity]
    assert verdicts
    for verdict in verdicts:
        part = Parity.from_dict(verdict.to_dict())
        assert part.extra == {}, f"undeclared parity keys: {sorted(part.extra)}"
        if part.validation is not None:
            assert part.validation.extra == {}, f"undeclared validation-verdict keys: {sorted(part.validation.extra)}"


def test_summary_and_throughput_keys_are_declared():
    summary = Summary.of([1.0, 1.2, 0.9, 1.1, 1.05])
    assert Summary.from_dict(summary.to_dict()).extra == {}
    throughput = Throughput.of(1.0, 4096, 1e12, PeakRates(match="H200", bf16=989.0, fp32=66.9, source="datasheet"))
    assert Throughput.from_dict(throughput.to_dict()).extra == {}
