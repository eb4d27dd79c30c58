"""The time breakdown, its kernel-name rules (on names recorded on an H200), the FLOP split, the
memory accounting and the FP8 proof, which refuses an FP8 case that ran no FP8 (through build_record)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tebench.analysis import breakdown, memory
from tebench.schema.environment import Environment, PeakRates
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.schema.records import FP8Options
from tebench.plan.schedule import Planned
from tebench.run.record_builder import build_record
from tebench.schema import kernel_rules
from tebench.schema.records import Kernels, Measurements, Memory, ModuleCensus

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "kernels" / "h200.json"
H200 = json.loads(FIXTURE.read_text())["kernels"]
PEAK = PeakRates(match="H200", bf16=989.4, fp8=1978.9, fp32=66.9, source="test")


# --- the rules, on the names an H200 ran --------------------------------------------------------

@pytest.mark.parametrize("entry", H200, ids=lambda e: e["name"][:60])
def test_every_recorded_kernel_is_classified_as_reviewed(entry):
    assert kernel_rules.classify(entry["name"]) == entry["category"]


def test_the_fixture_covers_every_path_and_no_kernel_is_unclassified():
    cats = {e["category"] for e in H200}
    assert {"gemm_fp32", "gemm_bf16", "gemm_fp8", "attention", "fp8_cast", "norm", "elementwise", "optimizer",
            "memory"} <= cats
    assert "other" not in cats and "gemm_unknown" not in cats


def test_precision_follows_the_mode_that_ran_it():
    # FP8 GEMMs and FP8 casts appear in TE-FP8 only (never under the bypass mutation); fp32 GEMMs in PT-FP32 only.
    for e in H200:
        if e["category"] in ("gemm_fp8", "fp8_cast"):
            assert e["modes"] == ["TE-FP8"], e
        if e["category"] == "gemm_fp32":
            assert e["modes"] == ["PT-FP32"], e
    bypass = [e for e in H200 if "TE-FP8 (fp8-bypass)" in e["modes"]]
    assert bypass and not any(e["category"] == "gemm_fp8" for e in bypass)


def test_regex_traps_of_the_first_sketch():
    # A C++ lambda's '#' is no annotation; 'lambda' is no LAMB optimizer; a cuBLASLt FP8 GEMM has no 'e4m3' in
    # its name; a fused norm that writes FP8 is the norm's time; PT-AMP's bf16 copies are no FP8 cast.
    assert kernel_rules.classify("Optimizer.step#AdamW.step") == kernel_rules.ANNOTATION
    assert kernel_rules.classify("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda"
                                 "(at::TensorIteratorBase&)::{lambda()#3}::operator()") == "elementwise"
    assert kernel_rules.classify("nvjet_sm90_qqtst_128x128_128x6_2x1_v_bz_TNT") == "gemm_fp8"
    assert kernel_rules.classify("nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT") == "gemm_bf16"
    assert kernel_rules.classify("void transformer_engine::normalization::ln_fwd_tuned_kernel<Kernel_traits<"
                                 "__nv_bfloat16, __nv_fp8_e4m3>>") == "norm"
    assert kernel_rules.classify("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel"
                                 "_cuda(at::TensorIteratorBase&)::{lambda(float)#1}>") == "elementwise"
    assert kernel_rules.classify("ncclDevKernel_AllReduce_Sum_bf16_RING_LL") == "communication"
    assert kernel_rules.classify("some_new_kernel") == "other"


def test_inductor_kernels_of_torchao_scaling_are_fp8_casts_unless_they_carry_a_norm_or_activation():
    # Names recorded on the H200 for AO-FP8 tensorwise and rowwise at GPT d4096 (2026-12-02): a kernel made
    # of the scaling ops alone is FP8's own work; one fused into a norm or an activation is that work.
    cast = ["triton_red_fused_abs_max_view_12", "triton_red_fused_abs_amax_t_4",
            "triton_poi_fused__scaled_mm__to_copy_clamp_clone_mul_reciprocal_t_view_5",
            "triton_poi_fused__to_copy_clamp_exp2_floor_log2_mul_reciprocal_t_33",
            "triton_red_fused__scaled_mm__to_copy_abs_amax_clamp_clone_exp2_floor_log2_mul_new_ones_reciprocal_t_view_10"]
    assert {kernel_rules.classify(n) for n in cast} == {"fp8_cast"}
    assert kernel_rules.classify("triton_poi_fused__scaled_mm__to_copy_clamp_clone_mul_native_layer_norm_reciprocal"
                                 "_t_view_14") == "norm"
    assert kernel_rules.classify("triton_red_fused__scaled_mm__to_copy_abs_add_amax_clamp_clone_exp2_floor_gelu_log2"
                                 "_mul_reciprocal_t_view_30") == "elementwise"
    # PT-AMP+compile's own casts are no FP8 work.
    assert kernel_rules.classify("triton_poi_fused__to_copy_13") == "elementwise"
    assert kernel_rules.classify("triton_red_fused__to_copy_abs_max_native_layer_norm_view_16") == "norm"
    assert kernel_rules.classify("nvjet_sm90_qqtst_128x128_128x6_2x1_v_bz_ovscale_TNT") == "gemm_fp8"


# --- breakdown, FLOP split, mixed MFU -----------------------------------------------------------

def _kernel_rows(*rows, union_ms=None, rest_ms=None):
    ks = [{"name": n, "ms": ms, "calls": c} for n, ms, c in rows]
    return Kernels.from_dict({"profiled_steps": 1, "union_ms": union_ms if union_ms is not None else
                              sum(k["ms"] for k in ks), "kernels": ks, "rest_ms": rest_ms})


BF16_GEMM, FP8_GEMM = "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT", "nvjet_sm90_qqtst_128x128_128x6_2x1_v_bz_TNT"
CAST = "cast_transpose_optimized_kernel(__nv_bfloat16 const*, float const*, __nv_fp8_e4m3*)"


def test_breakdown_sums_categories_and_idle_is_step_minus_union():
    k = _kernel_rows((BF16_GEMM, 6.0, 4), (FP8_GEMM, 3.0, 8), (CAST, 1.0, 8), ("Optimizer.step#AdamW.step", 50.0, 1),
                 ("mystery", 0.5, 2), union_ms=9.0, rest_ms=0.25)
    tb = breakdown.time_breakdown(k, 12.0)
    assert tb.categories_ms == {"gemm_bf16": 6.0, "gemm_fp8": 3.0, "fp8_cast": 1.0, "other": 0.75}
    assert tb.idle_ms == pytest.approx(3.0)
    assert tb.gemm_calls == {"bf16": 4, "fp8": 8}
    assert [u.name for u in tb.unclassified] == ["mystery"]
    assert breakdown.time_breakdown(k, 8.0).idle_ms == 0.0  # a profiled step longer than the median: never negative


def test_flop_split_and_mfu_against_the_mix_of_peaks():
    census = ModuleCensus.from_dict({"observed": True, "te_fp8": 4, "te_high_precision": 0,
                                     "linear_flops": {"fp8": 6e12, "bf16": 1e12}})
    split = breakdown.flop_split(10e12, census, "bf16")
    assert split == {"fp8": 6e12, "bf16": 4e12}  # the rest (attention) in the case's high precision
    step_ms = 10.0
    expected = (6e12 / (1978.9e12) + 4e12 / (989.4e12)) / 0.010
    assert breakdown.mixed_mfu(split, step_ms, PEAK, tf32=False) == pytest.approx(expected)
    assert breakdown.mixed_mfu({"fp32": 1e12}, step_ms, PEAK, tf32=True) is None  # no TF32 peak is known
    assert breakdown.flop_split(10e12, ModuleCensus.from_dict({"observed": False}), "bf16") is None


def test_amdahl():
    assert breakdown.amdahl(0.73, 2.0) == pytest.approx(1 / (0.27 + 0.365))
    assert breakdown.amdahl(0.0, 2.0) == 1.0


# --- memory accounting --------------------------------------------------------------------------

def test_memory_parts_add_up_to_the_peak():
    m = Memory.from_dict({"kind": "cuda", "peak_allocated_bytes": 100.0, "between_steps_bytes": 60.0,
                          "params_bytes": 10.0, "fp8_weight_bytes": 5.0, "grads_bytes": 10.0,
                          "optimizer_bytes": 20.0})
    parts = memory.composition(m)
    assert parts == {"params": 10.0, "fp8_weights": 5.0, "grads": 10.0, "optimizer": 20.0, "held_other": 15.0,
                     "activations": 40.0}
    assert sum(parts.values()) == m.peak_allocated_bytes
    assert memory.composition(Memory.from_dict({"kind": "cpu", "peak_rss_bytes": 5.0})) is None
    over = memory.composition(Memory.from_dict({"kind": "cuda", "peak_allocated_bytes": 50.0,
                                                "between_steps_bytes": 30.0, "params_bytes": 40.0}))
    assert over["held_other"] == 0.0 and over["activations"] == 10.0


def test_worker_counts_each_storage_once():
    import torch

    from tebench.worker import memory as worker_memory

    lin = torch.nn.Linear(4, 4)
    tied = torch.nn.ModuleDict({"a": lin, "b": lin})  # one weight seen twice
    opt = torch.optim.Adam(tied.parameters())
    tied["a"](torch.randn(2, 4)).sum().backward()
    opt.step()
    parts = worker_memory.composition(tied, opt)
    assert parts["params_bytes"] == (16 + 4) * 4
    assert parts["grads_bytes"] == (16 + 4) * 4
    assert parts["optimizer_bytes"] >= 2 * (16 + 4) * 4


# --- the FP8 proof, through build_record --------------------------------------------------------

def _fp8_case() -> Case:
    dims = (("vocab", 32), ("d_model", 64), ("heads", 4), ("layers", 2), ("ffn", 128), ("seq", 32), ("batch", 4))
    return Case(workload="gpt", size="t", mode="TE-FP8", dims=dict(dims),
                fp8=FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max"),
                settings=Settings(steps=4, warmup=0))


def _profiled_fp8_record(kernels, census):
    raw = Measurements.from_dict({"status": "ok", "timing": {"samples_ms": [10.0, 10.0, 10.0]},
                                  "loss": {"per_step": [2.0, 1.9, 1.8]},
                                  "kernels": kernels.to_dict() if kernels else None,
                                  "modules": census})
    env = Environment(device_type="cuda")
    return build_record(Planned(_fp8_case(), 0, None), raw, env, "run", 0.0, 1.0, None)


BYPASS = [e["name"] for e in H200 if "TE-FP8 (fp8-bypass)" in e["modes"]]
FP8_RUN = [e["name"] for e in H200 if "TE-FP8" in e["modes"]]


def test_an_fp8_case_that_ran_fp8_gemms_is_proven():
    rec = _profiled_fp8_record(_kernel_rows(*((n, 0.1, 1) for n in FP8_RUN)),
                  {"observed": True, "te_fp8": 16, "te_high_precision": 0})
    assert rec.status == "ok" and rec.fp8_proof.verdict == "fp8"
    assert 0 < rec.fp8_proof.fp8_share < 1 and rec.time_breakdown is not None


def test_an_fp8_case_that_ran_no_fp8_is_failed_naming_what_ran():
    # The kernels the fp8-bypass mutation ran on the H200: every GEMM in BF16.
    rec = _profiled_fp8_record(_kernel_rows(*((n, 0.1, 1) for n in BYPASS)),
                  {"observed": True, "te_fp8": 0, "te_high_precision": 16,
                   "te_outside_fp8": ["blocks.0.self_attention.proj"]})
    assert rec.status == "failed" and rec.fp8_proof.verdict == "no-fp8"
    assert "not an FP8 result" in rec.reason and "bf16" in rec.reason and "blocks.0.self_attention.proj" in rec.reason


def test_nn_linear_layers_in_a_te_family_are_refused_by_kernels_alone():
    # Under CUDA graphs the census sees nothing; BF16 GEMM names alone are enough evidence.
    rec = _profiled_fp8_record(_kernel_rows((BF16_GEMM, 1.0, 4)), {"observed": False, "note": "CUDA graphs"})
    assert rec.status == "failed" and rec.fp8_proof.verdict == "no-fp8"


def test_unknown_gemm_names_with_te_under_fp8_stay_unproven_not_failed():
    # Another GPU's kernels, which no rule knows yet: never a false refusal.
    rec = _profiled_fp8_record(_kernel_rows(("nvjet_sm100_xyz_gemm", 1.0, 4)),
                               {"observed": True, "te_fp8": 8, "te_high_precision": 0})
    assert rec.status == "ok" and rec.fp8_proof.verdict == "unproven"


def test_no_evidence_no_proof():
    rec = _profiled_fp8_record(None, None)
    assert rec.status == "ok" and rec.fp8_proof is None
