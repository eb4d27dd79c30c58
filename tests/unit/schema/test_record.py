"""Typed result records: lossless round trip, derived values in one place, schema versions."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, ROOT, read_text
from tebench.analysis import compare
from tebench.schema import records as record
from tebench.analysis import judged_run
from tebench.store import reader as results
from tebench.schema.version import MIN_READABLE_VERSION, SCHEMA, SCHEMA_VERSION, SchemaError
from tebench.schema import version as versions
from tebench.schema.environment import PeakRates
from tebench.schema.records import CaseResult, RunHeader
from tebench.analysis.judged_run import CaseRounds

RESULT_FILES = sorted(ROOT.glob("reports/*/results.jsonl*")) + sorted(FIXTURES.glob("*.jsonl"))
CPU = FIXTURES / "cpu-smoke.jsonl"
H200 = FIXTURES / "h200-crossover.jsonl"


def _schema_records(path: Path) -> list[dict]:
    out = []
    for line in read_text(path).splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and d.get("schema") == SCHEMA:
            out.append(d)
    return out


def _typed(d: dict):
    return (CaseResult if d.get("type") == "case" else RunHeader).from_dict(d)


def _read(path: Path) -> results.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return results.read(path)


@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stored_record_round_trips_key_order_included(path):
    lines = _schema_records(path)
    assert lines
    for d in lines:
        out = _typed(copy.deepcopy(d)).to_dict()
        assert out == d
        assert json.dumps(out) == json.dumps(d)  # the same bytes: merge writes records back through to_dict
    run = _read(path)  # as readers see them: case settings completed, non-finite values restored
    for r in [*run.headers, *run.cases]:
        d = r.to_dict()
        assert _typed(copy.deepcopy(d)).to_dict() == d


def test_unknown_and_new_keys_are_kept_where_they_were():
    d = copy.deepcopy(_schema_records(CPU)[1])
    d["phases"]["queue_s"] = 0.25
    d["warmup"] = {"rule": "settled", "steps": 12, "settled": True, "floor": 5, "ceiling": 50}
    d = {"launch": {"method": "prestarted", "preload_s": 3.5, "spawned_by": "te"}, **d}
    d["timing"]["future"] = [1, 2]
    d["parity"]["new_field"] = None
    d["shiny"] = {"new": True}
    r = CaseResult.from_dict(d)
    assert r.launch.method == "prestarted" and r.launch.extra == {"spawned_by": "te"} and r.warmup.settled is True
    assert r.extra == {"shiny": {"new": True}}
    assert r.timing.extra == {"future": [1, 2]} and "new_field" in r.parity.extra
    assert list(r.to_dict()) == list(d) and r.to_dict() == d
    h = _schema_records(CPU)[0]
    h["caches"] = {"dir": None, "state": "cold"}
    assert RunHeader.from_dict(h).to_dict() == h


def test_null_and_absent_stay_distinct():
    base = {"type": "case", "case_id": "x", "case": {"workload": "gpt", "size": "s", "mode": "PT-FP32", "dims": {}},
            "status": "skipped", "reason": None}
    assert CaseResult.from_dict(base).to_dict() == base
    with_log = {**base, "log": None}
    assert CaseResult.from_dict(with_log).to_dict() == with_log
    assert not CaseResult.from_dict(base).was_stored("log")
    assert CaseResult.from_dict(with_log).was_stored("log") and CaseResult.from_dict(with_log).log is None


_DECLARED = {f.alias or n for n, f in CaseResult.model_fields.items()} - {"schema", "schema_version"}
"""Keys a case record declares (the schema keys stay drawn: a foreign one must be refused)."""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extra=st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in _DECLARED),
                             st.one_of(st.none(), st.integers(), st.text(max_size=5),
                                       st.lists(st.floats(allow_nan=False))), max_size=5),
       nested=st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in record.Memory.model_fields),
                              st.integers(), max_size=3))
def test_any_extra_keys_round_trip(extra, nested):
    d = copy.deepcopy(_schema_records(CPU)[1])
    d.update(extra)
    if isinstance(d.get("memory"), dict):
        d["memory"].update(nested)
    try:
        r = CaseResult.from_dict(d)
    except SchemaError:
        assert "schema_version" in extra or "schema" in extra
        return
    assert r.to_dict() == d and list(r.to_dict()) == list(d)


# --- derived values --------------------------------------------------------------------------------

def _case_result(samples: list[float], round_: int = 0, status: str = "ok", **parts) -> CaseResult:
    d = {"type": "case", "run_id": "r", "case_id": "gpt/s/PT-AMP", "round": round_,
         "case": {"workload": "gpt", "size": "s", "mode": "PT-AMP", "dims": {}, "fp8": None, "graphs": False,
                  "fp8_weights": False, "parallel": "single", "nproc": 2, "settings": {}},
         "status": status, "reason": None, "device": {"type": "cuda", "name": "GPU"},
         "timing": {"samples_ms": samples, "stats": record.Summary.of(samples).to_dict()},
         "throughput": {"tokens_per_step": 1000, "flops_per_step": 2e12}, **parts}
    return CaseResult.from_dict(d)


def test_median_interval_and_rates_from_samples():
    r = _case_result([10.0, 12.0, 11.0, 30.0, 9.0])
    assert r.median_ms == 11.0
    assert (r.summary.p25, r.summary.p75) == (10.0, 12.0) and r.summary.to_dict() == record.Summary.of(r.samples_ms).to_dict()
    peak = PeakRates(match="test", bf16=100.0, fp32=1.0, source="test")
    rates = CaseRounds([r], peak).throughput()
    assert rates.tokens_per_s == pytest.approx(1000 / 0.011)
    assert rates.tflops == pytest.approx(2e12 / 0.011 / 1e12)
    assert rates.mfu == pytest.approx(rates.tflops / (100.0 * 2))  # nproc 2
    assert CaseRounds([r], None).throughput().mfu is None


def test_rounds_pool_steps_for_the_median_and_take_round_medians_for_the_level():
    rounds = CaseRounds([_case_result([3.0, 3.0, 3.0], 1), _case_result([1.0] * 7, 0), _case_result([2.0, 2.0, 2.0], 2)])
    assert [r.round_no for r in rounds.records] == [0, 1, 2]
    assert rounds.median_ms == 1.0  # pooled: seven ones of thirteen steps
    assert rounds.level_ms == 2.0 and rounds.round_medians_ms == [1.0, 3.0, 2.0]
    assert rounds.tokens_per_s == pytest.approx(1000 / 0.002)  # compare's: at the round level
    assert rounds.throughput().tokens_per_s == pytest.approx(1000 / 0.001)  # the report's: pooled


def test_rounds_status_is_the_worst_and_failed_rounds_are_not_timed():
    rounds = CaseRounds([_case_result([1.0, 1.0]), _case_result([5.0], 1, status="oom", reason="CUDA OOM")])
    assert rounds.status == "oom" and rounds.reason == "CUDA OOM"
    assert len(rounds.ok) == 1 and rounds.median_ms == 1.0


def test_peak_memory_gpu_or_cpu_and_speedup():
    gpu = _case_result([1.0], memory={"peak_allocated_bytes": 100, "peak_rss_bytes": 999})
    cpu = _case_result([1.0], memory={"kind": "rss", "peak_rss_bytes": 999})
    assert gpu.peak_memory == 100 and cpu.peak_memory == 999 and _case_result([1.0]).peak_memory is None
    assert CaseRounds([gpu, cpu]).memory_peaks == [100, 999]
    assert judged_run.speedup(10.0, 4.0) == 2.5
    assert list(judged_run.speedup(np.array([10.0, 3.0]), np.array([5.0, 3.0]))) == [2.0, 1.0]


@pytest.mark.parametrize("verdict,passed,problem", [("pass", True, False), ("fail", False, True),
                                                     ("inconclusive", False, True), ("reference", False, False),
                                                     ("n/a", False, False)])
def test_parity_pass_is_only_a_judged_pass(verdict, passed, problem):
    r = _case_result([1.0], parity={"verdict": verdict, "reason": "why"})
    assert r.parity.passed is passed and r.problem is problem
    assert r.verdict == verdict and r.why == "why"


def test_a_case_not_ok_is_a_problem_with_its_reason():
    r = _case_result([1.0], status="timeout", reason="ran past 10 s")
    assert r.problem and r.why == "ran past 10 s"
    assert not _case_result([1.0], status="skipped").problem


def test_report_compare_and_strict_use_one_judgement():
    """Stored verdicts may be stale; every reader re-judges the same way (the report's judgement)."""
    from tebench.report import load_all, tables

    stored = {(d["case_id"], d.get("round", 0)): (d.get("parity") or {}).get("verdict")
              for d in _schema_records(H200) if d["type"] == "case"}
    run = judged_run.read(H200)
    judged = {(r.case_id, r.round_no): r.verdict for r in run.cases}
    assert judged != stored  # this fixture has verdicts the current rules judge differently
    df = tables.case_frame(load_all([H200]))
    assert dict(zip(df["case_id"], df["parity"])) == {r.case_id: r.verdict for r in run.cases}
    strict = {r.case_id for r in run.problem_cases}
    shown = set(df[(~df["status"].isin(["ok", "skipped"])) | df["parity"].isin(["fail", "inconclusive"])]["case_id"])
    assert strict == shown and strict
    # compare reads the same verdicts and the same round-level step time.
    raw = results.read(H200)
    for rounds in judged_run.by_case(run.cases, run.header.peak_tflops, by_device=True).values():
        side = compare.side(rounds)
        assert side.parity == rounds.records[-1].verdict and side.median_ms == rounds.level_ms
    assert compare.environment(raw) == compare.environment(run)


def test_case_frame_values_come_from_case_rounds():
    from tebench.report import load_all, tables

    src = load_all([CPU])[0]
    df = tables.case_frame([src]).set_index("case_id")
    for case_id, rounds in judged_run.by_case(src.records, src.header.peak_tflops).items():
        row = df.loc[case_id]
        assert row["status"] == rounds.status
        if rounds.ok:
            assert row["median_ms"] == rounds.median_ms and row["p25_ms"] == rounds.summary.p25
            assert row["tokens_per_s"] == rounds.throughput().tokens_per_s
            assert row["memory_bytes"] == rounds.last.peak_memory


# --- schema versions -------------------------------------------------------------------------------

def test_every_readable_version_is_accepted_and_others_refused():
    d = _schema_records(CPU)[1]
    for version in range(MIN_READABLE_VERSION, SCHEMA_VERSION + 1):
        assert CaseResult.from_dict({**d, "schema_version": version}).case_id == d["case_id"]
    with pytest.raises(SchemaError, match="upgrade tebench"):
        CaseResult.from_dict({**d, "schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(SchemaError, match="older than the oldest"):
        RunHeader.from_dict({**_schema_records(CPU)[0], "schema_version": MIN_READABLE_VERSION - 1})
    built = {k: v for k, v in d.items() if k not in ("schema", "schema_version")}
    assert CaseResult.from_dict(built).to_dict() == built  # built in this process: current


def test_an_older_version_is_upgraded_step_by_step(monkeypatch):
    # The upgrade path a schema bump will use: each version's function turns it into the next.
    monkeypatch.setattr(versions, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    old = versions.SCHEMA_VERSION - 1

    def upgrade(d: dict) -> dict:
        d = dict(d)
        d["duration_s"] = d.pop("elapsed")
        d["schema_version"] = old + 1
        return d

    monkeypatch.setitem(record.UPGRADES, old, upgrade)
    d = {**_schema_records(CPU)[1], "schema_version": old}
    d["elapsed"] = d.pop("duration_s")
    r = CaseResult.from_dict(d)
    assert r.duration_s == d["elapsed"] and r.schema_version == old + 1 and "elapsed" not in r.extra


def test_a_version_without_an_upgrade_reads_as_it_is(monkeypatch):
    monkeypatch.setattr(versions, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    d = _schema_records(CPU)[1]
    assert CaseResult.from_dict(d).to_dict() == d


@pytest.mark.parametrize("strict", [False, True])
def test_run_strict_fails_on_the_verdicts_the_report_shows(strict, stub_cli, tmp_path, monkeypatch):
    """``run --strict`` judges the finished run again, as the report does, not by the stored verdicts."""
    import shutil

    from tebench.run import runner

    out = tmp_path / "run"

    def finished_run(matrix, env, opts):
        # The run itself is not the subject: its results are the H200 fixture.
        opts.out.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(H200, opts.out / results.RESULTS_NAME))

    monkeypatch.setattr(runner, "run_locked", finished_run)  # what tebench run calls, OUT locked
    proc = stub_cli("run", "--preset", "smoke", "--out", str(out), "--no-report", *(["--strict"] if strict else []))
    judged = judged_run.read(H200)
    stale = [d["case_id"] for d in _schema_records(H200) if d["type"] == "case"
             and (d.get("parity") or {}).get("verdict") == "pass"
             and next(r for r in judged.cases if r.case_id == d["case_id"]).verdict == "fail"]
    assert stale  # stored as pass, failed by today's rules (and by the report)
    listed = {line.split()[1].rstrip(":") for line in proc.stderr.splitlines() if line.startswith("  ")}
    assert listed == {r.case_id for r in judged.problem_cases} and set(stale) <= listed
    assert proc.returncode == (1 if strict else 0)
