"""The Llama workload: a Llama-style causal LM on the GPT workload's arithmetic task.

The architecture is the Llama family's: RMSNorm before attention and MLP,
rotary position embeddings (RoPE) instead of learned positions, grouped-query
attention (``kv_heads`` key/value heads shared by ``heads / kv_heads`` query
heads each), a SwiGLU MLP, no biases, and an untied LM head. The task, the
batches, the loss and the validation (greedy generation must continue the
stride) are the GPT workload's, inherited unchanged, so loss parity and the
validation verdict judge both workloads the same way.

The two families compute one function from the same canonical weights:

- ``pt``: :class:`PTBlock`, plain PyTorch with fused SDPA (``enable_gqa``);
- ``te``: ``te.TransformerLayer(normalization="RMSNorm", activation="swiglu",
  num_gqa_groups=kv_heads, bias=False)`` fed ``[batch, seq, hidden]`` with
  ``attn_input_format="bshd"`` and the rotary angles passed as ``rotary_pos_emb``.

Conventions that must agree between the two (checked on the GPU by
``tests/test_gpu.py``, on the CPU against a hand-written reference by
``tests/test_llama.py``):

- fused QKV weight, ``[(heads + 2 * kv_heads) * head_dim, d_model]``, rows
  ordered ``[q heads; k heads; v heads]`` (TE: ``fuse_qkv_params=True``,
  ``qkv_weight_interleaved=False``);
- query head ``h`` attends with key/value head ``h // (heads // kv_heads)``
  (``repeat_interleave``; SDPA's ``enable_gqa`` and TE's kernels both do this);
- RoPE in the "rotate half" (non-interleaved) form: dimension ``i`` of a head
  pairs with ``i + head_dim / 2``, angle ``pos * rope_theta ** (-2i / head_dim)``
  (TE's ``RotaryPositionEmbedding`` default, and Hugging Face Llama's);
- SwiGLU fc1 weight ``[2 * ffn, d_model]``: the first half is the gate,
  ``silu(first half) * second half`` (TE applies the gating to the first half);
- RMSNorm ``x / sqrt(mean(x^2) + 1e-5) * weight`` (TE's default epsilon,
  ``zero_centered_gamma=False``).
"""

from __future__ import annotations


import torch
import torch.nn.functional as F
from torch import nn

from tebench.worker.models.base import init_canonical
from tebench.worker.models.gpt import CausalLM, CausalLMWorkload
from tebench.workloads.llama_spec import LlamaSize, LlamaSpec

RMS_EPS = 1e-5
"""RMSNorm epsilon: TE's default ``layernorm_epsilon``, and Llama 2/3's ``rms_norm_eps``."""


def rope_angles(s: LlamaSize) -> torch.Tensor:
    """Rotary angles ``[seq, 1, 1, head_dim]`` (fp32), exactly as TE's RotaryPositionEmbedding makes them.

    ``angle[p, i] = p * rope_theta ** (-2 (i mod head_dim/2) / head_dim)``: the
    two halves of a head repeat the same frequencies (non-interleaved form).
    """
    inv_freq = 1.0 / (s.rope_theta ** (torch.arange(0, s.head_dim, 2, dtype=torch.float32) / s.head_dim))
    freqs = torch.outer(torch.arange(s.seq, dtype=torch.float32), inv_freq)
    return torch.cat((freqs, freqs), dim=-1).reshape(s.seq, 1, 1, s.head_dim)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` ``[batch, heads, seq, head_dim]`` in the rotate-half form, computed in fp32.

    fp32 like TE's fused RoPE kernel, which rotates in fp32 and rounds the result once.
    """
    xf = x.float()
    x1, x2 = xf.chunk(2, dim=-1)
    return (xf * cos + torch.cat((-x2, x1), dim=-1) * sin).to(x.dtype)


class RMSNorm(nn.Module):
    """RMSNorm with a weight and no bias: ``x / sqrt(mean(x^2) + eps) * weight``."""

    def __init__(self, dim: int, eps: float = RMS_EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if hasattr(F, "rms_norm"):  # torch >= 2.4
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


# SDPA shares key/value heads itself from torch 2.5 (enable_gqa); decided once, not
# with try/except inside a function that torch.compile traces.
# (TorchVersion compares with a tuple; its stub admits only str.)
_SDPA_GQA = torch.__version__ >= (2, 5)  # type: ignore[operator]


def _sdpa_gqa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True) -> torch.Tensor:
    """Fused attention (causal unless told otherwise) with fewer key/value heads than query heads."""
    if _SDPA_GQA:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    group = q.shape[1] // k.shape[1]  # expand the heads as enable_gqa would: head h reads h // group
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


class PTBlock(nn.Module):
    """Llama decoder block in plain PyTorch, laid out like te.TransformerLayer (see the module docstring)."""

    def __init__(self, s: LlamaSize):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = s.heads, s.kv_heads, s.head_dim
        q_dim, kv_dim = s.heads * s.head_dim, s.kv_heads * s.head_dim
        self.ln1 = RMSNorm(s.d_model)
        # One fused projection, output ordered [q; k; v] like TE's non-interleaved layout.
        self.qkv = nn.Linear(s.d_model, q_dim + 2 * kv_dim, bias=False)
        self.proj = nn.Linear(q_dim, s.d_model, bias=False)
        self.ln2 = RMSNorm(s.d_model)
        # Gate and up projections fused, gate first, like TE's fc1_weight for "swiglu".
        self.fc1 = nn.Linear(s.d_model, 2 * s.ffn, bias=False)
        self.fc2 = nn.Linear(s.ffn, s.d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, causal: bool = True) -> torch.Tensor:
        b, t, _ = x.shape
        hd = self.head_dim
        q, k, v = self.qkv(self.ln1(x)).split([self.heads * hd, self.kv_heads * hd, self.kv_heads * hd], dim=-1)
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.kv_heads, hd).transpose(1, 2)
        v = v.view(b, t, self.kv_heads, hd).transpose(1, 2)
        attn = _sdpa_gqa(apply_rope(q, cos, sin), apply_rope(k, cos, sin), v, causal)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, self.heads * hd))
        gate, up = self.fc1(self.ln2(x)).chunk(2, dim=-1)
        return x + self.fc2(F.silu(gate) * up)


class LlamaStack(nn.Sequential):
    """The decoder blocks of either family, with the rotary angles they share.

    ``forward(x)`` takes only the hidden states, so CUDA graphs capture the
    stack exactly as they capture the GPT workload's ``nn.Sequential`` (and
    indexing, iteration and parameter names are a Sequential's).
    """

    rope: torch.Tensor
    """Rotary angles, a buffer (:func:`rope_angles`); declared, as torch types a module's attribute Tensor | Module."""

    def __init__(self, s: LlamaSize, blocks: list[nn.Module], family: str):
        super().__init__(*blocks)
        self.family = family
        self.causal = True
        """False only under the ``no-causal`` self-test mutation (tebench.worker.hooks.mutations)."""
        # Not a parameter and not saved: derived from the size, identical in both families.
        self.register_buffer("rope", rope_angles(s), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.family == "te":
            mask = None if self.causal else "no_mask"  # None: the layer's own "causal"
            for block in self:
                x = block(x, rotary_pos_emb=self.rope, self_attn_mask_type=mask)
            return x
        angles = self.rope[: x.shape[1], 0, 0]
        cos, sin = angles.cos(), angles.sin()
        for block in self:
            x = block(x, cos, sin, self.causal)
        return x


# te.TransformerLayer parameter suffix -> canonical (PTBlock) suffix. RMSNorm and
# bias=False leave TE no bias parameters to map.
TE_BLOCK_NAMES = {
    "self_attention.layernorm_qkv.layer_norm_weight": "ln1.weight",
    "self_attention.layernorm_qkv.weight": "qkv.weight",
    "self_attention.proj.weight": "proj.weight",
    "layernorm_mlp.layer_norm_weight": "ln2.weight",
    "layernorm_mlp.fc1_weight": "fc1.weight",
    "layernorm_mlp.fc2_weight": "fc2.weight",
}


def te_block(s: LlamaSize, layer_number: int, device: torch.device) -> nn.Module:
    """One te.TransformerLayer configured to compute what PTBlock computes."""
    import transformer_engine.pytorch as te

    return te.TransformerLayer(
        hidden_size=s.d_model,
        ffn_hidden_size=s.ffn,
        num_attention_heads=s.heads,
        num_gqa_groups=s.kv_heads,
        layernorm_epsilon=RMS_EPS,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        self_attn_mask_type="causal",
        normalization="RMSNorm",
        activation="swiglu",
        bias=False,
        fuse_qkv_params=True,
        qkv_weight_interleaved=False,
        attn_input_format="bshd",
        layer_number=layer_number,
        params_dtype=torch.float32,
        device=device,
    )


class Llama(CausalLM):
    """Token embedding, a stack of blocks, final RMSNorm and an untied LM head (no positions: RoPE)."""

    def __init__(self, s: LlamaSize, blocks: LlamaStack):
        super().__init__()
        self.embed = nn.Embedding(s.vocab, s.d_model)
        self.blocks = blocks
        self.ln_f = RMSNorm(s.d_model)
        self.head = nn.Linear(s.d_model, s.vocab, bias=False)

    def embed_tokens(self, idx: torch.Tensor) -> torch.Tensor:
        return self.embed(idx)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln_f(self.blocks(self.embed_tokens(idx))))


class LlamaWorkload(LlamaSpec, CausalLMWorkload[LlamaSize]):
    """The Llama causal-LM workload: the GPT workload's task on a Llama-style model.

    Batches, loss, CUDA-graph inputs and validation are the GPT workload's
    (:class:`CausalLMWorkload`); only the arithmetic task's modulus is overridden, for ``task_vocab``.
    """

    @staticmethod
    def _modulus(s: LlamaSize) -> int:
        """The arithmetic sequences run modulo ``task_vocab`` when it is set (identical to GPT's when it is not)."""
        return s.task_vocab or s.vocab

    def mutate(self, model: Llama, kind: str, family: str) -> bool:
        """The ``no-causal`` self-test mutation (tebench.worker.hooks.mutations): attention also sees later tokens.

        The other mutations act on an ``nn.Sequential`` stack and refuse this one.
        """
        if kind != "no-causal":
            return False
        model.blocks.causal = False
        return True

    te_block_names = TE_BLOCK_NAMES

    def _pt(self, s: LlamaSize) -> Llama:
        return Llama(s, LlamaStack(s, [PTBlock(s) for _ in range(s.layers)], "pt"))

    def build(self, s: LlamaSize, family: str, device: torch.device, seed: int) -> Llama:
        """Build the model of ``family`` (pt|te) on ``device`` with the canonical weights."""
        with torch.device(device):
            if family == "pt":
                model = self._pt(s)
            else:
                blocks = [te_block(s, i + 1, device) for i in range(s.layers)]
                model = Llama(s, LlamaStack(s, blocks, "te"))
            init_canonical(self.canonical_params(model, s, family), seed, self._init_rule(s))
        return model

