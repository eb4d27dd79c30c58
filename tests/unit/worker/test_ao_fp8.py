"""AO-FP8's conversion on the CPU: torchao imports and converts on a CPU torch (its FP8 matmul is gated to CUDA).

What is checked: which layers convert (not the LM head, no dimension off a
multiple of 16), that the converted model keeps the canonical weights (the same
tensors), what ``setup`` says, the trainer's wiring, and the fp8-bypass mutation.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytest.importorskip("torchao.float8", reason="torchao is a test dependency (pip install -e '.[test]')")

from conftest import unsaid
from tebench.schema.records import Case  # noqa: E402
from tebench.schema.settings import Settings  # noqa: E402
from tebench.plan.recipes import fp8_options  # noqa: E402
from tebench.worker import ao_fp8  # noqa: E402
from tebench.worker.models import WORKLOADS  # noqa: E402
from tebench.worker.hooks import mutations  # noqa: E402
from tebench.workloads import size_of  # noqa: E402

GPT = (("vocab", 96), ("d_model", 32), ("heads", 2), ("layers", 2), ("ffn", 64), ("seq", 16), ("batch", 4))
CPU = torch.device("cpu")


def ao_case(recipe: str = "tensorwise", **kw) -> Case:
    return Case(workload="gpt", size="t", mode="AO-FP8", dims=dict(GPT), fp8=fp8_options(recipe, None, None, None),
                settings=Settings(steps=3, warmup=1), **kw)


def build(case: Case) -> nn.Module:
    return WORKLOADS[case.workload].build(size_of(case), "pt", CPU, case.settings.seed)


def test_the_filter_keeps_the_lm_head_and_odd_dimensions():
    model = build(ao_case())
    convert, keep = ao_fp8.plan(model)
    assert convert == [f"blocks.{i}.{n}" for i in range(2) for n in ("qkv", "proj", "fc1", "fc2")]
    assert keep == {"head": "the LM head"}
    odd = nn.Sequential(nn.Linear(32, 48), nn.Linear(48, 40), nn.Linear(40, 32))
    convert, keep = ao_fp8.plan(odd)
    assert convert == ["0"] and set(keep) == {"1", "2"}
    assert unsaid(keep["1"], "48x40", "multiple of 16") == [] and unsaid(keep["2"], "40x32", "multiple of 16") == []


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise", "rowwise_with_gw_hp"])
def test_conversion_keeps_the_canonical_weights_and_says_what_it_did(recipe):
    from torchao.float8.float8_linear import Float8Linear

    case = ao_case(recipe)
    model, canonical = build(case), build(case)
    params = [id(p) for p in model.parameters()]
    setup = ao_fp8.convert(model, recipe)
    assert [id(p) for p in model.parameters()] == params
    for (name, a), (_, b) in zip(model.state_dict().items(), canonical.state_dict().items()):
        assert torch.equal(a, b), name
    assert sum(isinstance(m, Float8Linear) for m in model.modules()) == 8
    assert not isinstance(model.head, Float8Linear)
    assert setup["fp8_library"] == "torchao" and setup["fp8_converted"] == 8
    assert setup["fp8_recipe"] == f"Float8LinearConfig.from_recipe_name({recipe!r})"
    assert unsaid(setup["fp8_conversion"], "convert_to_float8_training", "8 of 9 nn.Linear", "Float8Linear",
                  "high precision: head") == [], setup["fp8_conversion"]


def test_fsdp_all_gather_only_for_tensorwise():
    assert ao_fp8.config("tensorwise", fsdp_all_gather=True).enable_fsdp_float8_all_gather
    with pytest.raises(AssertionError, match="only supports tensorwise"):
        ao_fp8.config("rowwise", fsdp_all_gather=True)
    from tebench.worker.train import _fp8_all_gather

    assert _fp8_all_gather(ao_case("tensorwise", parallel="fsdp2", nproc=2))
    assert not _fp8_all_gather(ao_case("rowwise", parallel="fsdp2", nproc=2))
    assert not _fp8_all_gather(ao_case("tensorwise", parallel="ddp", nproc=2))


def test_a_converted_model_trains_on_the_cpu_eagerly():
    # A check of the conversion, not of speed: FP8 GEMMs in torch's CPU fallback, gradients reach every weight.
    model = build(ao_case())
    ao_fp8.convert(model, "tensorwise")
    x = torch.randint(0, 96, (4, 16))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
    loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), x.flatten())
    loss.backward()
    assert torch.isfinite(loss)
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_the_fp8_bypass_mutation_runs_float8_linear_in_high_precision():
    from torchao.float8.float8_linear import Float8Linear

    case = ao_case()
    model = build(case)
    ao_fp8.convert(model, "tensorwise")
    said = mutations.apply("fp8-bypass", model, WORKLOADS["gpt"], "pt", case)
    assert unsaid(said, "Float8Linear", "nn.Linear", "forward") == [], said
    layer = next(m for m in model.modules() if isinstance(m, Float8Linear))
    x = torch.randn(4, 32)
    assert torch.equal(layer(x), nn.functional.linear(x, layer.weight, layer.bias))
    with pytest.raises(RuntimeError, match="no torchao Float8Linear"):
        mutations.apply("fp8-bypass", build(case), WORKLOADS["gpt"], "pt", case)


def test_the_trainer_converts_before_the_optimizer_and_records_it():
    from torchao.float8.float8_linear import Float8Linear

    from tebench.worker.train import build_trainer

    trainer = build_trainer(ao_case("rowwise"), CPU, [])
    assert sum(isinstance(m, Float8Linear) for m in trainer.eager.modules()) == 8
    assert trainer.setup["compile"] == "torch.compile(mode='default')"
    assert trainer.setup["fp8_converted"] == 8 and trainer.setup["fp8_library"] == "torchao"
    assert trainer.setup["fp8_recipe"] == "Float8LinearConfig.from_recipe_name('rowwise')"
    optimized = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert optimized == {id(p) for p in trainer.eager.parameters()}


FSDP_SCRIPT = r'''
import os, socket, torch, torch.distributed as dist
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
dist.init_process_group("gloo", rank=0, world_size=1)
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.plan.recipes import fp8_options
from tebench.worker.distributed import _wrap
from tebench.worker.models import WORKLOADS
from tebench.worker.train import build_trainer
from tebench.workloads import size_of
from torchao.float8.fsdp_utils import WeightWithDynamicFloat8CastTensor
GPT = (("vocab", 96), ("d_model", 32), ("heads", 2), ("layers", 2), ("ffn", 64), ("seq", 16), ("batch", 4))
case = Case(workload="gpt", size="t", mode="AO-FP8", dims=dict(GPT), fp8=fp8_options("tensorwise", None, None, None),
            parallel="fsdp2", nproc=1, settings=Settings(steps=3, warmup=1))
cpu = torch.device("cpu")
batches = WORKLOADS["gpt"].batches(size_of(case), 3, 0, cpu)
trainer = build_trainer(case, cpu, batches, wrap=_wrap(case, cpu, []))
trainer.model = trainer.eager  # eager: the test checks the wiring, not Inductor on a 2-core CPU
gathered = [p for p in trainer.eager.parameters() if isinstance(p._local_tensor, WeightWithDynamicFloat8CastTensor)]
losses = [float(trainer.step(b)) for b in batches]
print(trainer.setup["fp8_fsdp_all_gather"], len(gathered),
      sum(getattr(p._local_tensor, "_precomputed_scale", None) is not None for p in gathered),
      losses[-1] < losses[0])
dist.destroy_process_group()
'''


def test_fsdp2_gathers_torchao_weights_in_fp8_and_precomputes_their_scales():
    # FSDP2 over one gloo rank on the CPU: the Float8 all-gather wiring and the scale hook, not multi-GPU speed.
    import subprocess
    import sys

    from conftest import ROOT

    out = subprocess.run([sys.executable, "-c", FSDP_SCRIPT], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-4:] == ["True", "8", "8", "True"], out.stdout
