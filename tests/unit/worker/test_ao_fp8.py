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

from tebench.plan.matrix import Case, Settings  # noqa: E402
from tebench.plan.recipes import FP8Options  # noqa: E402
from tebench.worker import ao_fp8  # noqa: E402
from tebench.worker.models import WORKLOADS  # noqa: E402
from tebench.worker.hooks import mutations  # noqa: E402

GPT = (("vocab", 96), ("d_model", 32), ("heads", 2), ("layers", 2), ("ffn", 64), ("seq", 16), ("batch", 4))
CPU = torch.device("cpu")


def ao_case(recipe: str = "tensorwise", **kw) -> Case:
    return Case("gpt", "t", "AO-FP8", GPT, FP8Options.normalized(recipe, None, None, None),
                settings=Settings(steps=3, warmup=1), **kw)


def build(case: Case) -> nn.Module:
    return WORKLOADS[case.workload].build(case.size_spec, "pt", CPU, case.settings.seed)


def test_the_filter_keeps_the_lm_head_and_odd_dimensions():
    model = build(ao_case())
    convert, keep = ao_fp8.plan(model)
    assert convert == [f"blocks.{i}.{n}" for i in range(2) for n in ("qkv", "proj", "fc1", "fc2")]
    assert keep == {"head": "the LM head"}
    odd = nn.Sequential(nn.Linear(32, 48), nn.Linear(48, 40), nn.Linear(40, 32))
    assert ao_fp8.plan(odd) == (["0"], {"1": "48x40 is not a multiple of 16", "2": "40x32 is not a multiple of 16"})


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
    assert setup["fp8_conversion"] == ("torchao convert_to_float8_training: 8 of 9 nn.Linear layers to "
                                       "Float8Linear; kept in high precision: head (the LM head)")


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
    assert "torchao's Float8Linear run nn.Linear's forward" in said
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
