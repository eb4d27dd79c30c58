"""The Llama workload on the CPU: the PyTorch twin computes the Llama function,
the TE name mapping covers every parameter, sizes and FLOPs are right."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch import nn

import llama_reference as ref
from tebench.worker.models import WORKLOADS
from tebench.workloads.spec import SizeError
from tebench.worker.models.llama import Llama, LlamaSize, LlamaStack
from tebench.workloads import size_of

CPU = torch.device("cpu")
WL = WORKLOADS["llama"]
# 4 query heads sharing 2 key/value heads, so a grouping mistake changes the result.
SIZE = LlamaSize(vocab=48, d_model=64, heads=4, kv_heads=2, layers=2, ffn=96, seq=24, batch=3, rope_theta=10000.0)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).norm() / b.norm()).item()


@pytest.fixture(scope="module")
def twin():
    """The PyTorch twin with sharpened attention, its weights, tokens and its fp64 logits."""
    model = WL.build(SIZE, "pt", CPU, seed=4)
    with torch.no_grad():
        # At the canonical init (std 0.02) attention is nearly uniform, and a
        # wrong RoPE or grouping would barely show; nor would swapped SwiGLU
        # halves under a small MLP. Scale Q/K/V and fc1 up so they do.
        for block in model.blocks:
            block.qkv.weight.mul_(6.0)
            block.fc1.weight.mul_(6.0)
    model = model.double()
    idx = torch.randint(0, SIZE.vocab, (SIZE.batch, SIZE.seq), generator=torch.Generator().manual_seed(0))
    params = {n: p.detach() for n, p in model.named_parameters()}
    with torch.no_grad():
        out = model(idx)
    return params, idx, out


def test_pytorch_twin_matches_the_plain_reference(twin):
    params, idx, out = twin
    # Only the fp32 RoPE rotation (as TE's fused kernel does it) separates the
    # two fp64 computations.
    assert _rel(out, ref.logits(params, SIZE, idx)) < 1e-6


@pytest.mark.parametrize("mistake", [{"grouping": "modulo"}, {"rope": "interleaved"}, {"gate": "second"}],
                         ids=["gqa-grouping", "rope-interleaved", "swiglu-halves"])
def test_each_plausible_mistake_is_far_outside_the_tolerance(twin, mistake):
    params, idx, out = twin
    assert _rel(out, ref.logits(params, SIZE, idx, **mistake)) > 0.1


class _FakeTELayer(nn.Module):
    """The parameter tree of te.TransformerLayer(RMSNorm, swiglu, GQA, bias=False, fused QKV).

    Shapes are TE's: layernorm_qkv.weight [(heads + 2 kv_heads) * head_dim, d],
    fc1_weight [2 * ffn, d] (gate and up), fc2_weight [d, ffn].
    """

    def __init__(self, s: LlamaSize, fc1_rows: int | None = None, bias: bool = False):
        super().__init__()
        hd = s.d_model // s.heads
        self.self_attention = nn.Module()
        self.self_attention.layernorm_qkv = nn.Module()
        qkv = self.self_attention.layernorm_qkv
        qkv.layer_norm_weight = nn.Parameter(torch.empty(s.d_model))
        qkv.weight = nn.Parameter(torch.empty((s.heads + 2 * s.kv_heads) * hd, s.d_model))
        self.self_attention.proj = nn.Module()
        self.self_attention.proj.weight = nn.Parameter(torch.empty(s.d_model, s.heads * hd))
        self.layernorm_mlp = nn.Module()
        mlp = self.layernorm_mlp
        mlp.layer_norm_weight = nn.Parameter(torch.empty(s.d_model))
        mlp.fc1_weight = nn.Parameter(torch.empty(fc1_rows or 2 * s.ffn, s.d_model))
        mlp.fc2_weight = nn.Parameter(torch.empty(s.d_model, s.ffn))
        if bias:
            mlp.fc2_bias = nn.Parameter(torch.empty(s.d_model))


def _fake_te_model(**kw) -> Llama:
    with torch.device("meta"):
        return Llama(SIZE, LlamaStack(SIZE, [_FakeTELayer(SIZE, **kw) for _ in range(SIZE.layers)], "te"))


def test_te_names_map_onto_every_canonical_parameter():
    pairs = WL.canonical_params(_fake_te_model(), SIZE, "te")
    pt = WL.build(SIZE, "pt", CPU, seed=1)
    expected = {n: tuple(p.shape) for n, p in pt.named_parameters()}
    got = {n: tuple(p.shape) for n, p in pairs}
    assert got == expected and len(pairs) == len(expected)


@pytest.mark.parametrize("kw,fragment", [({"bias": True}, "unmapped TE parameters"),
                                         ({"fc1_rows": SIZE.ffn}, "shape mismatches")],
                         ids=["te-bias", "fc1-without-gate"])
def test_te_layouts_that_differ_are_refused(kw, fragment):
    with pytest.raises(RuntimeError, match=fragment):
        WL.canonical_params(_fake_te_model(**kw), SIZE, "te")


def test_same_seed_same_weights_different_seed_different():
    a, b, c = (WL.build(SIZE, "pt", CPU, seed=s) for s in (7, 7, 8))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert any(not torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))
    params = dict(a.named_parameters())
    assert torch.all(params["blocks.0.ln1.weight"] == 1) and torch.all(params["ln_f.weight"] == 1)
    assert params["blocks.0.fc2.weight"].std() < params["blocks.0.fc1.weight"].std()


def test_params_of_the_llama3_8b_shape_are_its_published_count():
    # Llama 3 8B: 32 layers, d4096, 32/8 heads, ffn 14336, vocab 128256, untied head.
    s = LlamaSize(vocab=128256, d_model=4096, heads=32, kv_heads=8, layers=32, ffn=14336, seq=8192, batch=1)
    assert WL.params(s) == 8_030_261_248


def test_flops_count_gqa_and_swiglu_matrices():
    s = LlamaSize(vocab=1000, d_model=256, heads=8, kv_heads=2, layers=3, ffn=640, seq=128, batch=2)
    hd = 32
    per_layer = 256 * 256 * 2 + 2 * 256 * (2 * hd) + 3 * 256 * 640  # q, o; k, v (2 heads); gate, up, down
    tokens = 2 * 128
    expected = 6 * (3 * per_layer + 256 * 1000) * tokens + 12 * 3 * 256 * 128 * tokens
    assert WL.flops_per_step(s) == expected
    # Everything counted is a weight matrix of the model: the rest are norms and the embedding.
    norms_and_embed = 3 * 2 * 256 + 256 + 1000 * 256
    assert (WL.flops_per_step(s) - 12 * 3 * 256 * 128 * tokens) / (6 * tokens) == WL.params(s) - norms_and_embed


@pytest.mark.parametrize("change,key", [({"kv_heads": 3}, "kv_heads"), ({"rope_theta": "big"}, "rope_theta"),
                                        ({"d_model": 60, "heads": 4, "kv_heads": 4}, "heads"),
                                        ({"kv_heads": 0}, "kv_heads")])
def test_bad_sizes_name_their_key(change, key):
    import dataclasses

    with pytest.raises(SizeError) as err:
        WL.check(dataclasses.replace(SIZE, **change))
    assert err.value.key == key


def test_fp8_problem_names_the_qkv_width():
    s = LlamaSize(vocab=64, d_model=48, heads=6, kv_heads=3, layers=1, ffn=64, seq=16, batch=2)
    assert WL.fp8_problem(s) is None
    s = LlamaSize(vocab=64, d_model=40, heads=5, kv_heads=1, layers=1, ffn=64, seq=16, batch=2)
    assert "qkv=56" in WL.fp8_problem(s)


def test_training_lowers_the_loss_and_validation_reports_accuracy():
    model = WL.build(SIZE, "pt", CPU, seed=1)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    batches = WL.batches(SIZE, 20, 2, CPU)
    first = WL.loss(model, batches[0]).item()
    for b in batches:
        opt.zero_grad()
        WL.loss(model, b).backward()
        opt.step()
    assert WL.loss(model, batches[0]).item() < first - 0.5
    out = WL.validate(model, SIZE, 1, CPU, contextlib.nullcontext)
    assert out["metric"] == "greedy_accuracy" and 0.0 <= out["greedy_accuracy"] <= 1.0


@pytest.mark.parametrize("preset", ["nightly", "crossover"])
def test_presets_carry_the_llama_shapes_of_the_issue(preset):
    from tebench.plan import matrix
    from tebench.plan.matrix import iter_cases

    cases = [c for c in iter_cases(matrix.load(preset, is_preset=True)) if c.workload == "llama"]
    shapes = {(d["d_model"], d["layers"], d["heads"], d["kv_heads"], d["ffn"]) for d in (dict(c.dims) for c in cases)}
    assert (2048, 16, 32, 8, 8192) in shapes and any(s[0] == 4096 and s[2:] == (32, 8, 14336) for s in shapes)
    assert {c.mode for c in cases} >= {"PT-AMP", "PT-AMP+compile", "TE-BF16", "TE-FP8"}
    assert all(WL.fp8_problem(size_of(c)) is None for c in cases)
    assert all(dict(c.dims)["vocab"] >= 32000 for c in cases)


def test_task_vocab_narrows_the_sequences_not_the_model():
    import dataclasses

    s = dataclasses.replace(SIZE, vocab=1000, task_vocab=40)
    batch = WL.batches(s, 1, 3, CPU)[0]
    assert int(batch.inputs.max()) < 40 and int(batch.targets.max()) < 40
    assert WL.build(s, "pt", CPU, seed=1).head.out_features == 1000
    steps = (batch.targets - batch.inputs) % 40
    assert torch.all(steps == steps[:, :1])
    with pytest.raises(SizeError, match="task_vocab"):
        WL.check(dataclasses.replace(s, task_vocab=2000))


def test_older_torch_gqa_fallback_computes_the_same(monkeypatch):
    import tebench.worker.models.llama as llama

    model = WL.build(SIZE, "pt", CPU, seed=2)
    idx = WL.batches(SIZE, 1, 1, CPU)[0].inputs
    with torch.no_grad():
        fused = model(idx)
        monkeypatch.setattr(llama, "_SDPA_GQA", False)
        expanded = model(idx)
    torch.testing.assert_close(expanded, fused, rtol=1e-5, atol=1e-6)


def test_no_causal_mutation_lets_positions_see_later_tokens():
    model = WL.build(SIZE, "pt", CPU, seed=2)
    idx = WL.batches(SIZE, 1, 1, CPU)[0].inputs
    changed = idx.clone()
    changed[:, -1] = (changed[:, -1] + 1) % SIZE.vocab
    with torch.no_grad():
        assert torch.allclose(model(idx)[:, :-1], model(changed)[:, :-1], atol=1e-6)  # causal: last token unseen
        assert WL.mutate(model, "no-causal", "pt") and not WL.mutate(model, "freeze-layer", "pt")
        assert not torch.allclose(model(idx)[:, :-1], model(changed)[:, :-1])


def test_rms_norm_fallback_for_older_torch_computes_the_same(monkeypatch):
    from tebench.worker.models.llama import RMSNorm

    norm = RMSNorm(16)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    x = torch.randn(3, 5, 16)
    fused = norm(x)
    monkeypatch.delattr(torch.nn.functional, "rms_norm")
    torch.testing.assert_close(norm(x), fused)
    torch.testing.assert_close(fused, ref.rms_norm(x, norm.weight))
