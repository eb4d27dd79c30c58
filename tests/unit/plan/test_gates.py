"""Gates answer 'runs' or a reason, from the detected environment alone."""

from __future__ import annotations


import pytest

from conftest import unsaid
from tebench.schema.environment import GPU, Environment, Support
from tebench.plan.gates import gate_case
from tebench.schema.records import Case
from tebench.plan.modes import MODES
from tebench.plan.recipes import RECIPES, fp8_options
from tebench.schema.records import FP8Options

GPT = (("vocab", 96), ("d_model", 768), ("heads", 12), ("layers", 4), ("ffn", 3072), ("seq", 256), ("batch", 16))


def gpu_env(cc=(9, 0), te="2.20.2", fp8=True, gpus=1) -> Environment:
    env = Environment(device_type="cuda", gpus=[GPU(index=i, name="NVIDIA H200", capability=list(cc), memory_bytes=141 << 30, multiprocessors=132) for i in range(gpus)])
    env.te = te
    env.te_recipes = [s.te_class for s in RECIPES.values()]
    env.te_api = ["autocast", "quantized_model_init", "make_graphed_callables"]
    env.fp8 = Support(ok=fp8, reason="" if fp8 else "Device compute capability 8.9 or higher required for FP8 execution.")
    env.fp8_block = Support.yes()
    env.mxfp8 = Support.no("Device compute capability 10.0 or higher required for MXFP8 execution.")
    env.nvfp4 = Support.no("Device compute capability 10.0 or higher required for NVFP4 execution.")
    env.compile = Support.yes()
    env.fsdp2 = Support.yes()
    return env


def case(mode: str, fp8: FP8Options | None = None, dims=GPT, **kw) -> Case:
    return Case(workload="gpt", size="t", mode=mode, dims=dict(dims), fp8=fp8, **kw)


def test_cpu_runs_pytorch_and_skips_te_with_reason():
    env = Environment(device_type="cpu", compile=Support.yes())
    assert gate_case(case("PT-FP32"), env) is None
    assert gate_case(case("PT-AMP"), env) is None
    assert "CUDA GPU" in gate_case(case("TE-BF16"), env)
    assert "CUDA GPU" in gate_case(case("TE-FP8", FP8Options()), env)


def test_compile_gate_reports_the_missing_backend():
    env = Environment(device_type="cpu", compile=Support.no("no C++ compiler"))
    assert gate_case(case("PT-AMP+compile"), env) == "no C++ compiler"


def test_h200_runs_delayed_and_block_but_not_mxfp8_nvfp4():
    env = gpu_env()
    assert gate_case(case("TE-FP8", FP8Options(recipe="delayed", format="E4M3", amax_history_len=16, amax_compute_algo="max")), env) is None
    assert gate_case(case("TE-FP8", fp8_options("block", "E4M3", None, None)), env) is None
    assert "10.0" in gate_case(case("TE-FP8", fp8_options("mxfp8", "E4M3", None, None)), env)
    assert "10.0" in gate_case(case("TE-FP8", fp8_options("nvfp4", None, None, None)), env)


def test_ampere_runs_te_bf16_but_not_fp8():
    env = gpu_env(cc=(8, 0), fp8=False)
    assert gate_case(case("TE-BF16"), env) is None
    assert "8.9" in gate_case(case("TE-FP8", FP8Options()), env)
    assert "8.0" in gate_case(case("TE-BF16"), gpu_env(cc=(7, 5)))


def test_missing_te_and_missing_recipe_class():
    env = gpu_env()
    env.te, env.te_error = None, "ModuleNotFoundError: No module named 'transformer_engine'"
    assert "No module named" in gate_case(case("TE-BF16"), env)
    env = gpu_env(te="1.9")
    env.te_recipes = ["DelayedScaling"]
    reason = gate_case(case("TE-FP8", fp8_options("current", "E4M3", None, None)), env)
    assert reason is not None and unsaid(reason, "no recipe class", "Float8CurrentScaling") == [], reason


def test_fp8_needs_dims_divisible_by_16():
    odd = tuple((k, 100 if k == "d_model" else v) for k, v in GPT if k != "heads") + (("heads", 4),)
    reason = gate_case(case("TE-FP8", FP8Options(), dims=odd), gpu_env())
    assert "divisible by 16" in reason and "d_model=100" in reason
    assert gate_case(case("TE-BF16", dims=odd), gpu_env()) is None


def test_graphs_and_parallel_gates():
    cpu = Environment(device_type="cpu", compile=Support.yes(), fsdp2=Support.yes())
    assert "CUDA graphs" in gate_case(case("PT-AMP", graphs=True), cpu)
    assert gate_case(case("PT-AMP", parallel="ddp", nproc=2), cpu) is None  # gloo on the CPU
    reason = gate_case(case("PT-AMP", parallel="ddp", nproc=2), gpu_env())
    assert reason is not None and unsaid(reason, "2 GPUs", "1 visible") == [], reason
    assert gate_case(case("PT-AMP", parallel="fsdp2", nproc=2), gpu_env(gpus=2)) is None


@pytest.mark.parametrize("name", list(MODES))
def test_every_mode_has_the_gate_answer_its_registry_entry_implies(name):
    mode = MODES[name]
    if mode.fp8 == "torchao":
        pytest.skip("AO-FP8's gate: tests/unit/plan/test_torchao_modes.py (it needs torchao and a GPU)")
    fp8 = FP8Options() if mode.fp8 else None
    cpu = Environment(device_type="cpu", compile=Support.yes())
    no_te = gpu_env()
    no_te.te, no_te.te_error = None, "No module named 'transformer_engine'"
    if mode.family == "pt":
        # Plain PyTorch runs anywhere its compiler (if any) works.
        assert gate_case(case(name, fp8), cpu) is None
        assert gate_case(case(name, fp8), no_te) is None
    else:
        assert unsaid(gate_case(case(name, fp8), cpu) or "", name, "needs a CUDA GPU") == []
        assert unsaid(gate_case(case(name, fp8), no_te) or "", name, "needs Transformer Engine",
                      "No module named 'transformer_engine'") == []
    # An H200 with TE and FP8 runs every mode (the default delayed recipe included).
    assert gate_case(case(name, fp8), gpu_env()) is None
    if mode.compile:
        broken = Environment(device_type="cpu", compile=Support.no("no C++ compiler"))
        assert gate_case(case(name, fp8), broken) == "no C++ compiler"
