"""The environment part: one type from the probe to the stored header, its device name, its unknown keys."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

from tebench.analysis import compare
from tebench.schema.environment import GPU, Environment, PeakRates, Support, cpu_device_name
from tebench.schema.records import RunHeader
from tebench.schema.version import RecordError

ROOT = Path(__file__).resolve().parents[3]
STORED = sorted({*ROOT.glob("reports/*/*.jsonl*"), *(ROOT / "tests" / "fixtures").glob("*.jsonl")})


def _header_lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line for line in f if line.startswith("{") and '"type": "header"' in line[:200]]


@pytest.mark.parametrize("path", STORED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stored_environment_reads_typed_and_writes_back_the_same_bytes(path):
    lines = _header_lines(path)
    for line in lines:
        stored = json.loads(line)
        header = RunHeader.from_dict(copy.deepcopy(stored), line=line)
        if "env" not in stored:
            continue
        assert isinstance(header.env, Environment)
        assert header.env.extra == {}, f"keys the part does not declare: {sorted(header.env.extra)}"
        assert json.dumps(header.to_dict()) == json.dumps(stored)
        assert json.dumps(Environment.from_dict(stored["env"]).to_dict()) == json.dumps(stored["env"])


def test_stored_files_hold_environments():
    assert sum(1 for p in STORED for line in _header_lines(p) if '"env": {' in line) >= 10


def test_unknown_keys_ride_along_at_every_depth_in_their_place():
    env = {"device_type": "cuda", "from_a_newer_tebench": [1, {"x": None}],
           "gpus": [{"index": 0, "name": "H9", "capability": [12, 0], "memory_bytes": 1, "numa": 3}],
           "fp8": {"ok": True, "reason": "", "checked_by": "te"}, "cpu": "Z"}
    part = Environment.from_dict(copy.deepcopy(env))
    assert part.extra == {"from_a_newer_tebench": [1, {"x": None}]}
    assert part.gpus[0].extra == {"numa": 3} and part.fp8.extra == {"checked_by": "te"}
    assert list(part.to_dict()) == list(env) and part.to_dict() == env


def test_a_probe_answer_holds_every_field_nulls_included_in_declaration_order():
    built = Environment(device_type="cpu", cpu="test").to_dict()
    assert list(built) == list(Environment.model_fields)
    assert built["cuda"] is None and built["peak_tflops"] is None
    assert built["fp8"] == {"ok": False, "reason": "not probed"}


def test_the_stored_shape_is_checked_at_every_depth():
    with pytest.raises(RecordError, match=r"env\.gpus\[0\]\.capability\[1\]"):
        RunHeader.check({"type": "header", "env": {"device_type": "cuda", "gpus": [
            {"index": 0, "name": "H", "capability": [9, -1], "memory_bytes": 1}]}})
    with pytest.raises(RecordError, match=r"env\.gpus\[0\]\.capability\] = \[9\]: must hold at least 2"):
        RunHeader.check({"type": "header", "env": {"device_type": "cuda", "gpus": [
            {"index": 0, "name": "H", "capability": [9], "memory_bytes": 1}]}})
    with pytest.raises(RecordError, match=r"env\.gpus\] = None: must be an array"):
        RunHeader.check({"type": "header", "env": {"device_type": "cpu", "gpus": None}})
    with pytest.raises(RecordError, match=r"env\.device_type"):
        RunHeader.check({"type": "header", "env": {"device_type": "tpu"}})
    with pytest.raises(RecordError, match=r"env\.peak_tflops\.bf16"):
        RunHeader.check({"type": "header", "env": {"device_type": "cuda", "peak_tflops": {
            "match": "H", "bf16": "989", "fp32": 1.0, "source": "s"}}})


def _gpu(name: str) -> GPU:
    return GPU(index=0, name=name, capability=[9, 0], memory_bytes=1 << 30)


@pytest.mark.parametrize("env, name", [
    (Environment(device_type="cuda", gpus=[_gpu("NVIDIA H200"), _gpu("other")], cpu="Xeon"), "NVIDIA H200"),
    (Environment(device_type="cpu", cpu="AMD EPYC"), "CPU (AMD EPYC)"),
    (Environment(device_type="cpu"), "CPU (unknown)"),
    (Environment.from_dict({"device_type": "cpu", "cpu": None}), "CPU (unknown)"),
])
def test_the_device_name_rule(env, name):
    assert env.device_name == name


def test_every_reader_names_the_device_by_the_one_rule():
    unknown = RunHeader.from_dict({"type": "header", "env": {"device_type": "cpu"}})
    assert unknown.device == "CPU (unknown)"
    assert RunHeader.from_dict({"type": "header"}).device == "CPU (unknown)"  # a header without an environment

    class _Run:
        header = unknown

    assert compare.environment(_Run()).get("device") == "CPU (unknown)"  # type: ignore[arg-type]


def test_peaks_give_a_rate_per_precision():
    a100 = PeakRates(match="A100", bf16=312.0, fp8=None, fp32=19.5, source="datasheet")
    assert a100.rate("bf16") == 312.0 and a100.rate("fp8") is None and a100.rate("tf32") is None


def test_support_says_why_not():
    assert Support.yes().ok and Support.no("no compiler").reason == "no compiler"


def test_a_worker_names_its_cpu_by_the_headers_rule():
    from tebench.plan.environment import cpu_model

    here = cpu_model()
    assert cpu_device_name(here) == Environment(device_type="cpu", cpu=here).device_name
    assert cpu_device_name("") == cpu_device_name(None) == "CPU (unknown)"
