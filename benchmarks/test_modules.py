"""Module benchmarks: forward + backward of each TE module against its PyTorch twin.

    pytest benchmarks/ --benchmark-json=modules.json
    tebench report modules.json --out report/

Modules: te.Linear, te.LayerNorm, te.LayerNormLinear, te.LayerNormMLP,
te.TransformerLayer against nn.Linear, nn.LayerNorm, LN+Linear, LN+MLP and the
fused-SDPA PyTorch block, in PT-AMP, TE-BF16 and TE-FP8 (delayed scaling,
HYBRID, history 16). The timed function runs forward and backward and
synchronizes, so each round is one complete step on the device. TE modes
without a GPU (or TE) are skipped with the gate's reason.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from conftest import shapes
from tebench.plan.gates import gate_case
from tebench.schema.records import Case
from tebench.schema.records import FP8Options
from tebench.worker.train import make_precision
from tebench.worker.models import WORKLOADS
from tebench.workloads.modules_spec import MODULES, ModuleSize

MODES = {"PT-AMP": None, "TE-BF16": None, "TE-FP8": FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max")}


@pytest.mark.parametrize("hidden,tokens", shapes(), ids=lambda v: str(v))
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("module", MODULES)
def test_module(benchmark, env, module, mode, hidden, tokens):
    seq = min(512, tokens)
    size = ModuleSize(module=module, hidden=hidden, tokens=tokens, seq=seq)
    case = Case(workload="module", size=f"{module}.h{hidden}.t{tokens}", mode=mode, dims=dataclasses.asdict(size),
                fp8=MODES[mode])
    reason = gate_case(case, env)
    if reason:
        pytest.skip(reason)
    wl = WORKLOADS["module"]
    device = torch.device("cuda" if env.device_type == "cuda" else "cpu")
    model = wl.build(size, "te" if mode.startswith("TE") else "pt", device, seed=0)
    batch = wl.batches(size, 1, 0, device)[0]
    x = batch.inputs.detach().requires_grad_(True)
    grad = torch.randn_like(batch.inputs)
    precision = make_precision(case, device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def step():
        with precision.forward_ctx():
            out = model(x)
        out.backward(grad.to(out.dtype))
        x.grad = None
        for p in model.parameters():
            p.grad = None
        sync()

    for _ in range(5):  # warm-up: kernels, workspaces, FP8 scales
        step()
    benchmark.extra_info.update({
        "module": module, "mode": mode, "hidden": hidden, "tokens": tokens,
        "fp8": dataclasses.asdict(MODES[mode]) if MODES[mode] else None,
        "flops": wl.flops_per_step(size),
        "env": {"device_type": env.device_type, "gpus": [dataclasses.asdict(g) for g in env.gpus],
                "torch": env.torch, "te": env.te, "cuda": env.cuda, "driver": env.driver,
                "peak_tflops": env.peak_tflops},
    })
    benchmark.pedantic(step, rounds=30, iterations=1, warmup_rounds=2)
