"""The GPT workload: a causal LM trained on deterministic arithmetic sequences.

Sequences follow ``token[t] = (phase + stride * t) mod vocab`` with stride 1..6,
so a model that learned the task continues any prompt exactly; greedy
generation accuracy is the validation. The plain-PyTorch block uses fused SDPA
attention; the TE block is ``te.TransformerLayer`` fed ``[batch, seq, hidden]``
with ``attn_input_format="bshd"`` (its default ``sbhd`` would silently attend
across the batch: the loss still falls, to the wrong value).
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from tebench.worker.fp8_off import fp8_off
from tebench.worker.seeds import derive_seed
from tebench.worker.models.base import Batch, canonical_shapes, default_init, init_canonical, translate_names
from tebench.workloads import zipf_markov
from tebench.workloads.gpt_spec import MAX_STRIDE, CausalLMSpec, GPTSize, GPTSpec, SizeT

HELDOUT_BATCHES = 4
"""Held-out batches of the zipf-markov task's validation: 4 x the training batch, so that its loss's
sampling error is half of one training step's."""


def arithmetic_sequences(modulus: int, rows: int, length: int, seed: int) -> torch.Tensor:
    """``token[t] = (phase + stride * t) mod modulus``, one random phase and stride (1..6) per row."""
    gen = torch.Generator().manual_seed(seed)
    phase = torch.randint(0, modulus, (rows, 1), generator=gen)
    stride = torch.randint(1, MAX_STRIDE + 1, (rows, 1), generator=gen)
    return (phase + stride * torch.arange(length)) % modulus


def zipf_markov_sequences(vocab: int, rows: int, length: int, seed: int) -> torch.Tensor:
    """Sequences drawn from the zipf-markov source (:mod:`tebench.workloads.zipf_markov`).

    The same chain as the floor's simulation (``zipf_markov.simulate``), drawn
    with torch's generator: the first two tokens from the unigram distribution,
    then the successor, the copy or a Zipf draw; the first BURN_IN tokens are
    dropped, so every token a model predicts comes from the stationary chain.
    """
    gen = torch.Generator().manual_seed(seed)
    total = length + zipf_markov.BURN_IN
    first = torch.multinomial(torch.from_numpy(zipf_markov.unigram(vocab).copy()), 2 * rows, replacement=True,
                              generator=gen).view(rows, 2).tolist()
    draws = torch.multinomial(torch.from_numpy(zipf_markov.zipf_probabilities(vocab).copy()), rows * total,
                              replacement=True, generator=gen).view(rows, total).tolist()
    action = torch.rand(rows, total, generator=gen, dtype=torch.float64).tolist()
    succ = _successor_list(vocab)
    follow, either = zipf_markov.FOLLOW, zipf_markov.FOLLOW + zipf_markov.COPY
    out = []
    # Each token depends on the two before it: a scan. On plain Python ints it is ~0.3 us a token; as torch
    # ops over the rows it was ~10 us a position, 7 s of a Llama d2048 case's build on the H200.
    for r in range(rows):
        before, current = first[r]
        row = [before, current]
        u, d = action[r], draws[r]
        for t in range(2, total):
            nxt = succ[current] if u[t] < follow else (before if u[t] < either else d[t])
            row.append(nxt)
            before, current = current, nxt
        out.append(row[zipf_markov.BURN_IN:])
    return torch.tensor(out, dtype=torch.long)


@functools.lru_cache(maxsize=8)
def _successor_list(vocab: int) -> list[int]:
    return zipf_markov.successors(vocab).tolist()


def _other_tokens(x: torch.Tensor, vocab: int) -> torch.Tensor:
    """A different token at every position of ``x`` (a shift of 1..vocab-1, varied along the batch)."""
    return (x + 1 + x.roll(1, dims=0) % (vocab - 1)) % vocab


class PTBlock(nn.Module):
    """Pre-LayerNorm transformer block in plain PyTorch, laid out like te.TransformerLayer."""

    def __init__(self, s: GPTSize):
        super().__init__()
        self.heads = s.heads
        self.causal = True
        """False only under the ``no-causal`` self-test mutation (tebench.worker.hooks.mutations)."""
        self.ln1 = nn.LayerNorm(s.d_model)
        # One fused QKV projection, output ordered [q; k; v] like TE's non-interleaved layout.
        self.qkv = nn.Linear(s.d_model, 3 * s.d_model)
        self.proj = nn.Linear(s.d_model, s.d_model)
        self.ln2 = nn.LayerNorm(s.d_model)
        self.fc1 = nn.Linear(s.d_model, s.ffn)
        self.fc2 = nn.Linear(s.ffn, s.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        attn = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=self.causal
        )
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        # TE's "gelu" is the tanh approximation; use the same so the modes compute one function.
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


# te.TransformerLayer parameter suffix -> canonical (PTBlock) suffix.
TE_BLOCK_NAMES = {
    "self_attention.layernorm_qkv.layer_norm_weight": "ln1.weight",
    "self_attention.layernorm_qkv.layer_norm_bias": "ln1.bias",
    "self_attention.layernorm_qkv.weight": "qkv.weight",
    "self_attention.layernorm_qkv.bias": "qkv.bias",
    "self_attention.proj.weight": "proj.weight",
    "self_attention.proj.bias": "proj.bias",
    "layernorm_mlp.layer_norm_weight": "ln2.weight",
    "layernorm_mlp.layer_norm_bias": "ln2.bias",
    "layernorm_mlp.fc1_weight": "fc1.weight",
    "layernorm_mlp.fc1_bias": "fc1.bias",
    "layernorm_mlp.fc2_weight": "fc2.weight",
    "layernorm_mlp.fc2_bias": "fc2.bias",
}


def te_block(s: GPTSize, layer_number: int, device: torch.device) -> nn.Module:
    """One te.TransformerLayer configured to compute what PTBlock computes."""
    import transformer_engine.pytorch as te

    return te.TransformerLayer(
        hidden_size=s.d_model,
        ffn_hidden_size=s.ffn,
        num_attention_heads=s.heads,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        self_attn_mask_type="causal",
        fuse_qkv_params=True,
        qkv_weight_interleaved=False,
        attn_input_format="bshd",
        layer_number=layer_number,
        params_dtype=torch.float32,
        device=device,
    )


class CausalLM(nn.Module):
    """A model of the causal-LM task: tokens in, logits out; ``embed_tokens`` is what feeds ``blocks``."""

    def embed_tokens(self, idx: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class GPT(CausalLM):
    """Embedding, a stack of blocks, final LayerNorm and LM head.

    Only the block stack differs between families; ``blocks`` is the part that
    CUDA graphs capture.
    """

    def __init__(self, s: GPTSize, blocks: nn.Module):
        super().__init__()
        self.embed = nn.Embedding(s.vocab, s.d_model)
        self.pos = nn.Embedding(s.seq, s.d_model)
        self.blocks = blocks
        self.ln_f = nn.LayerNorm(s.d_model)
        self.head = nn.Linear(s.d_model, s.vocab)

    def embed_tokens(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        return self.embed(idx) + self.pos(positions)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln_f(self.blocks(self.embed_tokens(idx))))


class CausalLMWorkload(CausalLMSpec[SizeT]):
    """What the GPT and Llama workloads share: batches, loss, CUDA-graph inputs and validation of the task,
    and the canonical weights (names, shapes and init) of their PyTorch model."""

    te_block_names: ClassVar[dict[str, str]]
    """A TE block's parameter names -> the PyTorch block's (the canonical names)."""

    def _pt(self, s: SizeT) -> nn.Module:
        """The PyTorch model of size ``s``: the canonical names and shapes of the weights."""
        raise NotImplementedError

    def params(self, s: SizeT) -> int:
        return sum(math.prod(shape) for shape in canonical_shapes(lambda: self._pt(s)).values())

    def canonical_params(self, model: nn.Module, s: SizeT, family: str) -> list[tuple[str, torch.Tensor]]:
        """``(canonical name, parameter)`` pairs of a model of either family (names and shapes checked)."""
        if family == "pt":
            return list(model.named_parameters())
        return translate_names(model, self.te_block_names, canonical_shapes(lambda: self._pt(s)))

    @staticmethod
    def _init_rule(s: SizeT):
        # GPT-2 style: norms one, normal(0, 0.02), and the projections into the residual stream
        # (proj, fc2) scaled by 1/sqrt(2 * layers).
        return lambda name, shape: default_init(name, shape, residual_layers=s.layers)

    def batches(self, s: SizeT, count: int, seed: int, device: torch.device) -> list[Batch]:
        """``count`` batches, identical on every device (drawn on the CPU, then moved)."""
        out = []
        for i in range(count):
            seqs = self._sequences(s, derive_seed(seed, "batch", i), s.seq + 1)
            seqs = seqs.to(device)
            out.append(Batch(seqs[:, :-1].contiguous(), seqs[:, 1:].contiguous()))
        return out

    @classmethod
    def _sequences(cls, s: SizeT, seed: int, length: int, batch: int | None = None) -> torch.Tensor:
        """``batch`` (default: the size's) sequences of ``length`` tokens of the size's task."""
        rows = batch or s.batch
        if s.task == zipf_markov.NAME:
            return zipf_markov_sequences(s.vocab, rows, length, seed)
        return arithmetic_sequences(cls._modulus(s), rows, length, seed)

    @staticmethod
    def _modulus(s: SizeT) -> int:
        """How many tokens the arithmetic sequences use (all of vocab here)."""
        return s.vocab

    def graph_inputs(self, model: CausalLM, batch: Batch) -> tuple[torch.Tensor, ...]:
        """Sample input of ``model.blocks`` for CUDA-graph capture."""
        with torch.no_grad():
            x = model.embed_tokens(batch.inputs)
        return (x.detach().requires_grad_(True),)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        logits = model(batch.inputs)
        return F.cross_entropy(logits.float().flatten(0, 1), batch.targets.flatten())

    def validate(self, model: CausalLM, s: SizeT, seed: int, device: torch.device, forward_ctx) -> dict[str, Any]:
        """The task's held-out check: greedy generation (arithmetic) or held-out loss (zipf-markov)."""
        if s.task == zipf_markov.NAME:
            out = self._heldout_loss(model, s, seed, device, forward_ctx)
        else:
            out = self._greedy(model, s, seed, device, forward_ctx)
        return {**out, **self._structure(model, s, seed, device, forward_ctx)}

    def _structure(self, model: CausalLM, s: SizeT, seed: int, device: torch.device, forward_ctx) -> dict[str, Any]:
        """How much a sequence's predictions move when tokens change (mean KL, nats).

        ``causal_kl``: the later half of every held-out sequence replaced; the
        predictions at the earlier positions must not move (a model without its
        causal mask sees the future). ``batch_kl``: the rows of the batch rotated;
        each sequence's own predictions must not move (attention run across the
        batch, the layout mistake, mixes them). Both hold by construction in a
        correct model, whatever it has learned, so they catch these mistakes at
        any point on the curve, where a loss comparison needs the model to have
        learned what the mistake hides.

        ``context_kl`` is the opposite check: every eighth token replaced, the
        predictions right after each must move, as far as the reference's do,
        since both tasks make the next token depend on the one before the
        current. A model whose attention never mixes positions (the layout
        mistake, where attention runs over the batch and learns to ignore it)
        moves them by exactly 0, which ``batch_kl`` cannot see.

        Every one runs with FP8 off (:mod:`tebench.worker.fp8_off`): a per-tensor
        scale taken from the whole batch would move the predictions by rounding.
        """
        x = self._sequences(s, derive_seed(seed, "held-out"), s.seq).to(device)
        half = s.seq // 2
        later = x.clone()
        later[:, half:] = _other_tokens(x[:, half:], s.vocab)
        before = x.clone()
        before[:, 4::8] = _other_tokens(x[:, 4::8], s.vocab)
        model.eval()
        with torch.no_grad():
            fp8 = []

            def logp(tokens: torch.Tensor) -> torch.Tensor:
                with forward_ctx(), fp8_off(model) as state:
                    fp8.append(state)
                    return F.log_softmax(model(tokens).float(), dim=-1)

            base = logp(x)
            moved = logp(later)
            rotated = logp(x.roll(1, dims=0)).roll(-1, dims=0)
            context = logp(before)
        model.train()

        def kl(p: torch.Tensor, q: torch.Tensor) -> float:
            return (p.exp() * (p - q)).sum(-1).mean().item()

        return {"causal_kl": kl(base[:, :half], moved[:, :half]),
                "batch_kl": kl(base, rotated) if x.shape[0] > 1 else None,
                "context_kl": kl(base[:, 5::8], context[:, 5::8]) if s.seq > 5 else None,
                "structure_fp8": fp8[0]}

    def _heldout_loss(self, model: CausalLM, s: SizeT, seed: int, device: torch.device, forward_ctx) -> dict[str, Any]:
        """Mean cross-entropy on held-out batches of the source, beside the source's exact floor.

        Drawn from the ``held-out`` seed of the *case's* seed (a reference's extra seeds are validated on
        the same batches), each at the training batch's shape (FP8's divisibility rules, compiled shapes).
        """
        floor = zipf_markov.floor(s.vocab)
        total, count = 0.0, 0
        model.eval()
        with torch.no_grad():
            for i in range(HELDOUT_BATCHES):
                # Batch i of the held-out seed's own batch stream: never a training batch.
                seqs = self._sequences(s, derive_seed(derive_seed(seed, "held-out"), "batch", i), s.seq + 1).to(device)
                with forward_ctx():
                    logits = model(seqs[:, :-1])
                total += F.cross_entropy(logits.float().flatten(0, 1), seqs[:, 1:].flatten(),
                                         reduction="sum").item()
                count += seqs[:, 1:].numel()
        model.train()
        return {
            "metric": "heldout_loss",
            "kind": "loss",
            "count": count,
            "heldout_loss": total / count,
            "floor": floor.entropy_rate,
            "unigram_entropy": floor.unigram_entropy,
            "uniform_loss": floor.uniform,
        }

    def _greedy(self, model: CausalLM, s: SizeT, seed: int, device: torch.device, forward_ctx) -> dict[str, Any]:
        """Greedy generation must continue the arithmetic stride.

        Prompts are the first half of held-out sequences; the model generates up
        to 16 tokens greedily. Every forward pass sees the full [batch, seq]
        shape (positions not yet generated are zeros, which causal attention
        never lets earlier positions see), so FP8's divisibility rules and
        compiled shapes hold.
        """
        truth = self._sequences(s, derive_seed(seed, "held-out"), s.seq).to(device)
        prompt = s.seq // 2
        new = min(16, s.seq - prompt)
        buf = torch.zeros_like(truth)
        buf[:, :prompt] = truth[:, :prompt]
        model.eval()
        with torch.no_grad():
            for g in range(new):
                with forward_ctx():
                    logits = model(buf)
                buf[:, prompt + g] = logits[:, prompt + g - 1].argmax(-1)
        model.train()
        correct = (buf[:, prompt:prompt + new] == truth[:, prompt:prompt + new]).float()
        return {
            "metric": "greedy_accuracy",
            # An accuracy over `count` independent sequences (tokens within one
            # sequence are not independent: one wrong token derails the rest).
            "kind": "accuracy",
            "count": s.batch,
            "greedy_accuracy": correct.mean().item(),
            "sequences_exact": correct.all(dim=1).float().mean().item(),
            "prompt_tokens": prompt,
            "generated_tokens": new,
        }


class GPTWorkload(GPTSpec, CausalLMWorkload[GPTSize]):
    """The GPT causal-LM workload: the spec (:mod:`tebench.workloads.gpt_spec`) plus the model."""

    te_block_names = TE_BLOCK_NAMES

    def _pt(self, s: GPTSize) -> GPT:
        return GPT(s, nn.Sequential(*[PTBlock(s) for _ in range(s.layers)]))

    def build(self, s: GPTSize, family: str, device: torch.device, seed: int) -> GPT:
        """Build the model of ``family`` (pt|te) on ``device`` with the canonical weights."""
        # Built directly on the device: PyTorch's default init of a multi-billion
        # parameter model on the CPU would take longer than the benchmark.
        with torch.device(device):
            if family == "pt":
                model = self._pt(s)
            else:
                model = GPT(s, nn.Sequential(*[te_block(s, i + 1, device) for i in range(s.layers)]))
            init_canonical(self.canonical_params(model, s, family), seed, self._init_rule(s))
        return model

    def mutate(self, model: GPT, kind: str, family: str) -> bool:
        """Apply a workload-specific self-test mutation (tebench.worker.hooks.mutations); False if not expressible."""
        if kind != "no-causal":
            return False
        blocks: Any = model.blocks  # an nn.Sequential (or a compile wrapper of one)
        if family == "pt":
            for block in blocks:
                block.causal = False
        else:
            from tebench.worker.hooks.mutations import WithForwardKwargs

            for i, block in enumerate(blocks):
                blocks[i] = WithForwardKwargs(block, self_attn_mask_type="no_mask")
        return True
