"""Parity re-judging finds references by grouping, in linear time, with the verdicts of the full scan.

The oracle is the reference search as it was before grouping (every lookup
scanned every record), kept here verbatim over the records' objects and swapped
in for the grouped one;
the rest of the judging is the same code either way, so any difference comes
from which references a case is judged against.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path
from typing import Any, Callable

import pytest

from tebench.analysis import parity
from tebench.schema.records import CaseResult, Parity
from tebench.store import reader as results
from tebench.plan.modes import REFERENCE_MODES

from conftest import ROOT  # noqa: E402
STORED = sorted(ROOT.glob("reports/*/results.jsonl*")) + sorted((ROOT / "tests" / "fixtures").glob("*.jsonl"))


def _same_setup_before(case: dict[str, Any], other: dict[str, Any]) -> bool:
    s, o = case["settings"], other["settings"]
    return (all(other[k] == case[k] for k in ("workload", "size", "dims"))
            and o["seed"] == s["seed"]
            and o["steps"] + o["warmup"] == s["steps"] + s["warmup"]
            and o["lr"] == s["lr"]
            and o.get("lr_warmup", 0) == s.get("lr_warmup", 0)
            and o.get("adam_beta2", 0.999) == s.get("adam_beta2", 0.999)
            and o.get("grad_clip", 0.0) == s.get("grad_clip", 0.0))


class QuadraticRuns(list):
    """The reference search before grouping: ``_plain_runs`` and ``_reference_runs`` as they were."""

    used = 0

    def __init__(self, records: list[CaseResult]):
        super().__init__(records)
        self.objects = [r.to_dict() for r in self]

    def of(self, record: CaseResult, mode: str) -> list[CaseResult]:
        QuadraticRuns.used += 1
        case = record.to_dict()["case"]
        return [t for t, r in zip(self, self.objects)
                if r.get("status") == "ok" and r.get("loss") and r["case"]["mode"] == mode and not r["case"].get("graphs")
                and r["case"].get("parallel", "single") == "single" and not r["case"].get("fp8")
                and not (r.get("setup") or {}).get("test_mutation") and _same_setup_before(case, r["case"])]

    def reference(self, record: CaseResult) -> tuple[str | None, list[CaseResult]]:
        for mode in REFERENCE_MODES:
            runs = self.of(record, mode)
            if runs:
                return mode, runs
        return None, []


def _json(verdict: Parity | None) -> str:
    """A verdict as exact JSON, key order included (NaN compares equal as text)."""
    return json.dumps(verdict.to_dict() if verdict is not None else None)


def _verdicts(records: list[CaseResult], judge: Callable[[list[CaseResult]], None]) -> list[str]:
    """Every record's parity after ``judge`` on a deep copy, as exact JSON."""
    mine = copy.deepcopy(records)  # keeps a record listed twice one object, as in the original
    judge(mine)
    return [_json(r.parity) for r in mine]


def _both(records: list[CaseResult], monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    new = _verdicts(records, parity.attach)
    QuadraticRuns.used = 0
    with monkeypatch.context() as m:
        m.setattr(parity, "_Grouped", QuadraticRuns)
        old = _verdicts(records, parity.attach)
    assert QuadraticRuns.used, "the oracle was not used: attach no longer looks references up through _Grouped"
    return new, old


def _stored_cases(path: Path) -> list[CaseResult]:
    # Every record, superseded re-runs included: more references, and order matters (the first is the reference).
    return results.read(path).cases


@pytest.mark.parametrize("path", STORED, ids=[str(p.relative_to(ROOT)) for p in STORED])
def test_stored_results_judge_as_before(path, monkeypatch):
    records = _stored_cases(path)
    new, old = _both(records, monkeypatch)
    assert new == old
    assert any(v != "null" for v in new)


def test_all_stored_results_together_judge_as_before(monkeypatch):
    """One list of every stored file: references from one file serve cases of another, as in a merge."""
    records = [r for path in STORED for r in _stored_cases(path)]
    new, old = _both(records, monkeypatch)
    assert new == old


def _curve(rng: random.Random, end: float, n: int = 24) -> list[float]:
    return [4.0 * (end / 4.0) ** (i / (n - 1)) * (1.0 + rng.gauss(0.0, 0.01)) for i in range(n)]


def _record_dict(rng: random.Random, mode: str, round_: int = 0, end: float = 1.0, **case: Any) -> dict[str, Any]:
    settings = {"seed": 1, "steps": 20, "warmup": 4, "lr": 1e-3, "lr_warmup": 0, "parity_rtol": 0.1,
                "parity_atol": 0.05, **case.pop("settings", {})}
    for key in case.pop("drop", ()):
        del settings[key]
    return {"case_id": f"{mode}-{round_}", "round": round_, "status": case.pop("status", "ok"),
            "case": {"workload": "gpt", "size": "s", "mode": mode, "dims": {"d": 8, "l": 2}, "fp8": None,
                     "graphs": False, "parallel": "single", **case, "settings": settings},
            "loss": {"per_step": _curve(rng, end)},
            "validation": {"metric": "greedy_accuracy", "greedy_accuracy": 0.9, "count": 64},
            "setup": {}}


# Each changes one thing _same_setup compares (or one it must not tell apart); "drop" removes settings.
SETUPS: dict[str, dict[str, Any]] = {
    "base": {},
    "same total steps": {"settings": {"steps": 22, "warmup": 2}},
    "other seed": {"settings": {"seed": 2}},
    "other steps": {"settings": {"steps": 30}},
    "other lr": {"settings": {"lr": 2e-3}},
    "int lr": {"settings": {"lr": 1}},
    "float lr equal to it": {"settings": {"lr": 1.0}},
    "no lr_warmup": {"drop": ["lr_warmup"]},
    "lr_warmup": {"settings": {"lr_warmup": 5}},
    "adam_beta2": {"settings": {"adam_beta2": 0.95}},
    "adam_beta2 at its default": {"settings": {"adam_beta2": 0.999}},
    "grad_clip": {"settings": {"grad_clip": 1.0}},
    "dims reordered": {"dims": {"l": 2, "d": 8}},
    "other dims": {"dims": {"d": 16, "l": 2}},
    "other size": {"size": "m"},
    "other workload": {"workload": "llama"},
}


def _edge_records(seed: int = 0) -> list[dict[str, Any]]:
    """Every setup above with references, fallbacks, and runs that must not serve as a reference."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i, extra in enumerate(SETUPS.values()):
        # extra is bound as a default: every record of this group must carry this setup, not the last one's.
        def rec(mode: str, round_: int = 0, end: float = 1.0, extra: dict[str, Any] = extra,
                **more: Any) -> dict[str, Any]:
            return _record_dict(rng, mode, round_, end, **copy.deepcopy(extra), **more)
        group = [rec("PT-AMP", 0, 1.01), rec("PT-AMP", 1, 1.01), rec("TE-BF16", 0, 1.02),
                 rec("TE-FP8", 0, 1.6, fp8={"recipe": "delayed"}), rec("PT-AMP+compile", 0, 1.0)]
        if i % 3 != 2:  # every third setup has no PT-FP32: PT-AMP is its reference
            group += [rec("PT-FP32", 0), rec("PT-FP32", 1), rec("PT-FP32", 2, 1.3)]
        if i % 3 == 1:  # ... or a PT-FP32 that does not count
            group += [rec("PT-FP32", 3, status="oom"), rec("PT-FP32", 4, graphs=True),
                      rec("PT-FP32", 5, parallel="ddp"), rec("PT-FP32", 6, fp8={"recipe": "delayed"})]
        mutated = rec("PT-FP32", 7)
        mutated["setup"] = {"test_mutation": "frozen"}
        diverged = rec("TE-BF16", 1, status="diverged")
        diverged["loss"]["per_step"][-1] = math.nan
        frozen = rec("TE-BF16", 2)
        frozen["updates"] = {"unchanged": 3, "unchanged_names": ["w"]}
        group += [mutated, diverged, frozen]
        out += group
    out.append(_record_dict(rng, "TE-BF16", 0, 1.02, settings={"seed": 99}))  # no run of its setup: n/a
    rng.shuffle(out)
    typed = [CaseResult.from_dict(r) for r in out]
    typed.append(typed[3])  # one record listed twice
    return typed


def test_edge_cases_judge_as_before(monkeypatch):
    records = _edge_records()
    new, old = _both(records, monkeypatch)
    assert new == old
    verdicts = {json.loads(v)["verdict"] for v in new if v != "null"}
    assert {"reference", "pass", "fail", "n/a"} <= verdicts


def test_judge_of_each_new_record_as_before(monkeypatch):
    """The runner judges each new record against the ones before it: ``judge(records + [rec], rec)``."""
    records = _edge_records(seed=1)
    new = [_json(parity.judge(records[:i + 1], r)) for i, r in enumerate(records)]
    with monkeypatch.context() as m:
        m.setattr(parity, "_Grouped", QuadraticRuns)
        old = [_json(parity.judge(records[:i + 1], r)) for i, r in enumerate(records)]
    assert new == old


def test_reference_for_as_before(monkeypatch):
    records = _edge_records(seed=2)
    new = [parity.reference_for(records, r) for r in records]
    with monkeypatch.context() as m:
        m.setattr(parity, "_Grouped", QuadraticRuns)
        old = [parity.reference_for(records, r) for r in records]
    assert new == old


def _setups(n_setups: int) -> list[CaseResult]:
    rng = random.Random(0)
    return [CaseResult.from_dict(_record_dict(rng, mode, round_, size=f"s{i}"))
            for i in range(n_setups) for mode in ("PT-FP32", "PT-AMP", "TE-BF16") for round_ in range(3)]


def test_attach_compares_each_record_with_its_own_group_only(monkeypatch):
    """Linear, counted rather than timed: four times the records, four times the setup comparisons."""
    calls = 0
    same_setup = parity._same_setup

    def counted(record: CaseResult, other: CaseResult) -> bool:
        nonlocal calls
        calls += 1
        return same_setup(record, other)

    monkeypatch.setattr(parity, "_same_setup", counted)
    # Only the search is counted: the curves need no judging.
    monkeypatch.setattr(parity, "evaluate", lambda *a, **k: Parity.from_dict({"verdict": "inconclusive", "reason": ""}))
    counts = []
    for n_setups in (20, 80):
        calls = 0
        parity.attach(_setups(n_setups))
        counts.append(calls)
    # 9 records a setup, each compared with its setup's 3 PT-FP32 rounds (and 3 PT-AMP ones)
    assert counts[0] <= 9 * 6 * 20
    assert counts[1] == 4 * counts[0]
