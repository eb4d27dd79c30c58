"""AO-FP8 on a GPU: torchao's float8 training runs, computes in FP8 (the proof from its kernels), and is refused
when its layers are bypassed. Run on the H200: ``pytest tests/gpu/test_torchao_gpu.py``."""

from __future__ import annotations

import dataclasses

import pytest

from tebench.schema.records import Case

from tebench.schema.settings import Settings
from tebench.plan.recipes import fp8_options
from tebench.worker.models.gpt import GPTSize
from tests.gpu.test_gpu import run_built

pytestmark = [pytest.mark.gpu, pytest.mark.torchao]

SIZE = GPTSize(vocab=96, d_model=256, heads=4, layers=2, ffn=1024, seq=128, batch=16)


def _ao_fp8_case(recipe: str, graphs: bool = False) -> Case:
    return Case(workload="gpt", size="tiny", mode="AO-FP8", dims=dataclasses.asdict(SIZE),
                fp8=fp8_options(recipe, None, None, None), graphs=graphs,
                settings=Settings(steps=8, warmup=3, lr=3e-3, profile_steps=0, validate=False))


@pytest.mark.parametrize("recipe, graphs, mutation", [
    ("tensorwise", False, None), ("rowwise", False, None), ("rowwise_with_gw_hp", False, None),
    ("tensorwise", True, None), ("tensorwise", False, "fp8-bypass")])
def test_ao_fp8_runs_in_fp8_and_is_refused_when_bypassed(recipe, graphs, mutation, monkeypatch):
    record = run_built(_ao_fp8_case(recipe, graphs), mutation, monkeypatch)
    case = record.case_id
    proof = record.fp8_proof
    print(f"\n{case} graphs={graphs} {mutation}: {record.status} {record.reason or ''}\n  proof: "
          f"{proof.verdict if proof else None}: {proof.note if proof else ''}\n  setup: {record.setup.fp8_conversion}"
          f"\n  kernels: {[getattr(k, 'name', None) or k['name'] for k in (record.kernels.kernels if record.kernels else [])][:8]}")
    assert record.setup.fp8_library == "torchao" and record.setup.fp8_converted == 4 * SIZE.layers
    assert proof is not None
    if mutation is None:
        assert record.status == "ok", record.reason
        assert proof.verdict == "fp8" and proof.fp8_gemm_calls > 0, proof.note
    else:
        assert record.status == "failed" and proof.verdict == "no-fp8", proof.note
        assert "not an FP8 result" in record.reason
