"""Workloads on the CPU: same weights and batches for every mode, FLOP counts, validation."""

from __future__ import annotations

import pytest
import torch

from tebench.worker.models import WORKLOADS
from tebench.worker.models.distill import DistillSize
from tebench.worker.models.gpt import GPTSize
from tebench.workloads.modules_spec import MODULES, ModuleSize

CPU = torch.device("cpu")
SIZES = {
    "gpt": GPTSize(vocab=32, d_model=32, heads=2, layers=2, ffn=64, seq=16, batch=4),
    "distill": DistillSize(vocab=64, hidden=32, ffn=64, blocks=2, seq=8, batch=4),
    "module": ModuleSize(module="layernorm_mlp", hidden=32, tokens=64),
}


@pytest.mark.parametrize("name", list(SIZES))
def test_same_seed_same_weights_and_batches(name):
    wl, size = WORKLOADS[name], SIZES[name]
    a, b = wl.build(size, "pt", CPU, seed=7), wl.build(size, "pt", CPU, seed=7)
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert na == nb and torch.equal(pa, pb)
    c = wl.build(size, "pt", CPU, seed=8)
    assert any(not torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))
    ba, bb = wl.batches(size, 3, 11, CPU), wl.batches(size, 3, 11, CPU)
    assert all(torch.equal(x.inputs, y.inputs) and torch.equal(x.targets, y.targets) for x, y in zip(ba, bb))


def test_layernorm_weights_one_biases_zero_residual_projections_scaled():
    model = WORKLOADS["gpt"].build(SIZES["gpt"], "pt", CPU, seed=1)
    params = dict(model.named_parameters())
    assert torch.all(params["blocks.0.ln1.weight"] == 1) and torch.all(params["blocks.0.qkv.bias"] == 0)
    assert params["blocks.0.proj.weight"].std() < params["blocks.0.qkv.weight"].std()


def test_gpt_sequences_follow_the_stride():
    wl, size = WORKLOADS["gpt"], SIZES["gpt"]
    batch = wl.batches(size, 1, 3, CPU)[0]
    steps = (batch.targets - batch.inputs) % size.vocab
    assert torch.all(steps == steps[:, :1]) and torch.all((steps >= 1) & (steps <= 6))


def test_gpt_flops_match_the_formula():
    s = GPTSize()  # the tutorial size
    n = s.layers * (4 * s.d_model**2 + 2 * s.d_model * s.ffn) + s.d_model * s.vocab
    tokens = s.batch * s.seq
    assert WORKLOADS["gpt"].flops_per_step(s) == 6 * n * tokens + 12 * s.layers * s.d_model * s.seq * tokens


def test_gpt_validation_reports_greedy_accuracy():
    import contextlib

    wl, size = WORKLOADS["gpt"], SIZES["gpt"]
    model = wl.build(size, "pt", CPU, seed=1)
    out = wl.validate(model, size, 1, CPU, contextlib.nullcontext)
    assert 0.0 <= out["greedy_accuracy"] <= 1.0 and out["generated_tokens"] == 8


@pytest.mark.parametrize("module", MODULES)
def test_every_pytorch_module_trains(module):
    wl = WORKLOADS["module"]
    size = ModuleSize(module=module, hidden=32, tokens=64, seq=16)
    model = wl.build(size, "pt", CPU, seed=1)
    batch = wl.batches(size, 1, 1, CPU)[0]
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    first = wl.loss(model, batch)
    for _ in range(5):
        opt.zero_grad()
        loss = wl.loss(model, batch)
        loss.backward()
        opt.step()
    assert wl.loss(model, batch).item() < first.item()


def test_te_name_translation_rejects_a_mismatch():
    from tebench.worker.models.base import canonical_shapes, translate_names

    model = WORKLOADS["gpt"].build(SIZES["gpt"], "pt", CPU, seed=1)
    expected = canonical_shapes(lambda: WORKLOADS["gpt"]._pt(GPTSize(vocab=32, d_model=32, heads=2, layers=3,
                                                                      ffn=64, seq=16, batch=4)))
    with pytest.raises(RuntimeError, match="no TE counterpart"):
        translate_names(model, {}, expected)
