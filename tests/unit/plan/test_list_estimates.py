"""``tebench list``'s time estimates come from the machine's probe; skipped cases get none; a total is given."""

from __future__ import annotations

from tebench.schema.environment import Environment
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.plan.shards import estimate_cost, estimate_seconds

DIMS = (("vocab", 96), ("d_model", 2048), ("heads", 16), ("layers", 12), ("ffn", 8192), ("seq", 1024), ("batch", 16))


def _d2048_case(mode: str) -> Case:
    return Case(workload="gpt", size="d2048", mode=mode, dims=dict(DIMS), fp8=None,
                settings=Settings(steps=20, warmup=6))


def test_a_cpu_estimate_uses_the_cpus_measured_rate_not_a_gpus():
    cpu = Environment(device_type="cpu", cpu_gflops=35.0)
    # ~1.3 PFLOP per step at d2048: minutes per step on a CPU, not the ~23 s a GPU rate gave.
    assert estimate_seconds(_d2048_case("PT-FP32"), cpu) > 3600
    assert estimate_cost(_d2048_case("PT-FP32")) < 60  # the sharding cost stays machine-independent


def test_a_gpu_estimate_uses_its_peak_and_fp32_is_slower():
    gpu = Environment(device_type="cuda", peak_tflops={"bf16": 989.4, "fp8": 1978.9, "fp32": 66.9, "match": "H200",
                                                       "source": "datasheet"})
    amp, fp32 = estimate_seconds(_d2048_case("PT-AMP"), gpu), estimate_seconds(_d2048_case("PT-FP32"), gpu)
    assert 15 < amp < 200 and fp32 > 5 * (amp - 15)


def test_list_prints_a_total_and_no_estimate_for_skipped_cases(tebench_cli):
    proc = tebench_cli("list", "--preset", "smoke")
    assert proc.returncode == 0, proc.stderr
    skipped = [line for line in proc.stdout.splitlines() if line.strip().startswith("skip")]
    assert skipped and not any("~" in line for line in skipped)
    assert any(line.endswith("small cases)") and "in all, estimated from" in line for line in proc.stdout.splitlines())
