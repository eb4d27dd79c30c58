"""FP8 coverage is part of the FP8 proof: a TE-FP8 case that ran FP8 over too little of its model is
``partial`` (kept ``ok``, out of every FP8 figure), and a TE-family case whose model has no TE module
at all is not a TE result (failed). Numbers from runs on an H200."""

from __future__ import annotations

import pytest

from tebench.analysis import breakdown
from tebench.schema.environment import Environment
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.schema.records import FP8Options
from tebench.plan.schedule import Planned
from tebench.run.record_builder import NOT_TE_REASON, build_record
from tebench.schema.records import FP8Proof, Kernels, Measurements, ModuleCensus

BF16_GEMM, FP8_GEMM = "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT", "nvjet_sm90_qqtst_128x128_128x6_2x1_v_bz_TNT"
DIMS = (("vocab", 32), ("d_model", 64), ("heads", 4), ("layers", 2), ("ffn", 128), ("seq", 32), ("batch", 4))
OUTSIDE = [f"blocks.{b}.{m}" for b in (2, 3, 4) for m in ("self_attention.qkv", "self_attention.proj",
                                                           "mlp.fc1", "mlp.fc2")]


def _gemm_kernels(fp8_calls: float, bf16_calls: float) -> Kernels:
    ks = [{"name": FP8_GEMM, "ms": 0.1 * fp8_calls, "calls": fp8_calls},
          {"name": BF16_GEMM, "ms": 0.2 * bf16_calls, "calls": bf16_calls}]
    ks = [k for k in ks if k["calls"]]
    return Kernels.from_dict({"profiled_steps": 1, "union_ms": sum(k["ms"] for k in ks), "kernels": ks})


def _census(te_fp8: int | None, te_high: int | None, flops: dict[str, float] | None = None,
            outside: list[str] | None = None, observed: bool = True) -> ModuleCensus:
    return ModuleCensus.from_dict({"observed": observed, "te_fp8": te_fp8, "te_high_precision": te_high,
                                   "te_outside_fp8": outside, "linear_flops": flops})


def _profiled_record(mode: str, kernels: Kernels | None, census: ModuleCensus | None):
    fp8 = FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max") if mode == "TE-FP8" else None
    case = Case(workload="gpt", size="t", mode=mode, dims=dict(DIMS), fp8=fp8, settings=Settings(steps=4, warmup=0))
    raw = Measurements.from_dict({"status": "ok", "timing": {"samples_ms": [10.0, 10.0, 10.0]},
                                  "loss": {"per_step": [2.0, 1.9, 1.8]},
                                  "kernels": kernels.to_dict() if kernels else None,
                                  "modules": census.to_dict() if census else None})
    return build_record(Planned(case, 0, None), raw, Environment(device_type="cuda"), "run", 0.0, 1.0, None)


# --- the verdict --------------------------------------------------------------------------------

def test_full_coverage_is_fp8_with_its_shares():
    # The correct TE-FP8 GPT: 48 of 52 GEMM launches, 99.7% of linear FLOPs in FP8.
    proof = breakdown.fp8_proof(_gemm_kernels(48, 4), _census(16, 0, {"bf16": 1.8e9, "fp8": 6.9e11}))
    assert proof.verdict == "fp8", proof.note
    assert proof.fp8_gemm_call_share == pytest.approx(48 / 52)
    assert proof.fp8_linear_flops_share == pytest.approx(6.9e11 / (6.9e11 + 1.8e9))
    assert proof.outside_recipe is None


def test_blocks_outside_autocast_are_partial_with_the_numbers():
    # Blocks 2-4 outside FP8 autocast: 4 of 16 TE modules, 12 of 55 launches, 22% of linear FLOPs.
    proof = breakdown.fp8_proof(_gemm_kernels(12, 43), _census(4, 12, {"bf16": 7.8e10, "fp8": 2.2e10}, OUTSIDE))
    assert proof.verdict == "partial", proof.note
    assert "4 of 16 TE modules" in proof.note and "12 of 55 GEMM launches" in proof.note
    assert "22% of linear FLOPs" in proof.note and "blocks.2.self_attention.qkv" in proof.note
    assert proof.fp8_gemm_call_share == pytest.approx(12 / 55)
    assert proof.fp8_linear_flops_share == pytest.approx(0.22)
    assert proof.outside_recipe == OUTSIDE


@pytest.mark.parametrize("census, kernels, short", [
    # each criterion alone demotes a case that would otherwise be proven
    (_census(15, 1, {"fp8": 9e11, "bf16": 1e9}, ["blocks.0.mlp.fc1"]), _gemm_kernels(50, 2), "outside the recipe"),
    (_census(16, 0, {"fp8": 4e11, "bf16": 6e11}), _gemm_kernels(50, 2), "linear FLOPs"),
    (_census(16, 0, {"fp8": 9e11, "bf16": 1e9}), _gemm_kernels(20, 30), "GEMM launches in FP8"),
])
def test_each_shortfall_alone_is_partial(census, kernels, short):
    proof = breakdown.fp8_proof(kernels, census)
    assert proof.verdict == "partial" and short in proof.note, proof.note


def test_a_census_alone_shows_partial_coverage_without_kernels():
    proof = breakdown.fp8_proof(None, _census(4, 12, None, OUTSIDE))
    assert proof.verdict == "partial" and "4 of 16 TE modules" in proof.note
    assert proof.fp8_gemm_call_share is None and proof.outside_recipe == OUTSIDE


def test_a_llama_bf16_lm_head_at_79_percent_is_fp8():
    # Llama d2048: the 128k-vocab head is an nn.Linear in BF16, every TE module under the recipe.
    proof = breakdown.fp8_proof(_gemm_kernels(112, 3), _census(64, 0, {"bf16": 2.1e12, "fp8": 7.9e12}))
    assert proof.verdict == "fp8", proof.note
    assert proof.fp8_linear_flops_share == pytest.approx(0.79)


def test_the_bar_is_the_stated_constant(monkeypatch):
    census, kernels = _census(64, 0, {"bf16": 2.1e12, "fp8": 7.9e12}), _gemm_kernels(112, 3)
    monkeypatch.setattr(breakdown, "MIN_FP8_COVERAGE", 0.8)
    assert breakdown.fp8_proof(kernels, census).verdict == "partial"


def test_no_fp8_stays_no_fp8_with_its_shares():
    proof = breakdown.fp8_proof(_gemm_kernels(0, 52), _census(0, 16, {"bf16": 7e11}, OUTSIDE))
    assert proof.verdict == "no-fp8" and "no GEMM" in proof.note and "FP8" in proof.note, proof.note
    assert proof.fp8_gemm_call_share == 0 and proof.fp8_linear_flops_share == 0
    assert proof.outside_recipe == OUTSIDE


def test_unknown_gemm_names_with_every_module_under_the_recipe_stay_unproven():
    kernels = Kernels.from_dict({"profiled_steps": 1, "union_ms": 1.0,
                                 "kernels": [{"name": "nvjet_sm100_xyz_gemm", "ms": 1.0, "calls": 4}]})
    proof = breakdown.fp8_proof(kernels, _census(8, 0, {"fp8": 1e9}))
    assert proof.verdict == "unproven", proof.note


def test_the_new_fields_round_trip_and_partial_is_a_declared_verdict():
    proof = breakdown.fp8_proof(_gemm_kernels(12, 43), _census(4, 12, {"bf16": 7.8e10, "fp8": 2.2e10}, OUTSIDE))
    d = proof.to_dict()
    FP8Proof.check(d)
    back = FP8Proof.from_dict(d)
    assert (back.verdict, back.fp8_gemm_call_share, back.outside_recipe) == ("partial", d["fp8_gemm_call_share"],
                                                                             OUTSIDE)


# --- through build_record -----------------------------------------------------------------------

def test_prove_fp8_keeps_a_partial_case_ok_and_says_why():
    rec = _profiled_record("TE-FP8", _gemm_kernels(12, 43), _census(4, 12, {"bf16": 7.8e10, "fp8": 2.2e10}, OUTSIDE))
    assert rec.status == "ok" and rec.fp8_proof.verdict == "partial"
    assert rec.reason.startswith("partial FP8") and "4 of 16 TE modules" in rec.reason, rec.reason
    assert "kept out" in rec.reason and "FP8" in rec.reason, rec.reason


def test_a_fully_covered_case_has_no_reason():
    rec = _profiled_record("TE-FP8", _gemm_kernels(48, 4), _census(16, 0, {"bf16": 1.8e9, "fp8": 6.9e11}))
    assert rec.status == "ok" and rec.fp8_proof.verdict == "fp8" and rec.reason is None


@pytest.mark.parametrize("te_fp8, te_high", [(0, 0), (None, None)])
def test_a_te_bf16_case_without_te_modules_is_not_a_te_result(te_fp8, te_high):
    rec = _profiled_record("TE-BF16", _gemm_kernels(0, 52), _census(te_fp8, te_high, {"bf16": 7e11}))
    assert rec.status == "failed" and rec.reason == NOT_TE_REASON
    assert rec.reason.startswith("not a TE result")


def test_a_te_fp8_case_without_te_modules_is_not_a_te_result_first():
    rec = _profiled_record("TE-FP8", _gemm_kernels(0, 52), _census(0, 0, {"bf16": 7e11}))
    assert rec.status == "failed" and rec.reason == NOT_TE_REASON


def test_te_modules_or_an_unobserved_census_leave_the_case_alone():
    ran_te = _profiled_record("TE-BF16", _gemm_kernels(0, 52), _census(0, 16, {"bf16": 7e11}))
    assert ran_te.status == "ok" and ran_te.reason is None
    blind = _profiled_record("TE-BF16", _gemm_kernels(0, 52), _census(None, None, observed=False))
    assert blind.status == "ok" and blind.reason is None


def test_a_model_of_te_norms_only_is_a_te_result():
    # module/layernorm: a te.LayerNorm has no FP8 metadata, so only the census's te_other sees it (H200, gpu-smoke).
    census = _census(0, 0, None)
    census.te_other = 1
    rec = _profiled_record("TE-BF16", _gemm_kernels(0, 3), census)
    assert rec.status == "ok" and rec.reason is None
    no_norm = _census(0, 0, None)
    no_norm.te_other = 0
    assert _profiled_record("TE-BF16", _gemm_kernels(0, 3), no_norm).reason == NOT_TE_REASON


def test_a_pt_case_is_never_judged_a_te_result():
    rec = _profiled_record("PT-AMP", _gemm_kernels(0, 52), _census(0, 0, {"bf16": 7e11}))
    assert rec.status == "ok" and rec.reason is None
