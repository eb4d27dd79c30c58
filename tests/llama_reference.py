"""An independent, deliberately plain formulation of the Llama forward pass.

Written from the formulas, not from tebench's code: one query head at a time,
explicit key/value head selection, explicit rotary angles per (position, pair),
an explicit causal mask and softmax, RMSNorm and SwiGLU spelled out. The
``grouping``, ``rope`` and ``gate`` switches produce the plausible mistakes
(wrong GQA grouping, interleaved RoPE, swapped SwiGLU halves) that a test must
be able to tell apart from the correct function.
"""

from __future__ import annotations

import math

import torch


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rotate(x: torch.Tensor, theta: float, rope: str) -> torch.Tensor:
    """Rotate ``x`` [batch, seq, head_dim]: each pair of dimensions by position * frequency."""
    _, t, hd = x.shape
    out = torch.empty_like(x)
    for i in range(hd // 2):
        freq = theta ** (-2.0 * i / hd)
        angle = torch.arange(t, dtype=torch.float64, device=x.device) * freq
        cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
        a, b = (i, i + hd // 2) if rope == "half" else (2 * i, 2 * i + 1)
        out[:, :, a] = x[:, :, a] * cos - x[:, :, b] * sin
        out[:, :, b] = x[:, :, a] * sin + x[:, :, b] * cos
    return out


def logits(params: dict[str, torch.Tensor], s, idx: torch.Tensor, grouping: str = "consecutive",
           rope: str = "half", gate: str = "first") -> torch.Tensor:
    """Logits of the Llama model whose canonical weights are ``params``, for tokens ``idx``."""
    hd = s.d_model // s.heads
    group = s.heads // s.kv_heads
    x = params["embed.weight"][idx]
    causal = torch.ones(idx.shape[1], idx.shape[1], dtype=torch.bool, device=idx.device).tril()
    for layer in range(s.layers):
        p = {k[len(f"blocks.{layer}."):]: v for k, v in params.items() if k.startswith(f"blocks.{layer}.")}
        h = rms_norm(x, p["ln1.weight"])
        w = p["qkv.weight"]
        wq, wk, wv = w[: s.heads * hd], w[s.heads * hd: (s.heads + s.kv_heads) * hd], w[(s.heads + s.kv_heads) * hd:]
        heads = []
        for qh in range(s.heads):
            kvh = qh // group if grouping == "consecutive" else qh % s.kv_heads
            q = rotate(h @ wq[qh * hd:(qh + 1) * hd].T, s.rope_theta, rope)
            k = rotate(h @ wk[kvh * hd:(kvh + 1) * hd].T, s.rope_theta, rope)
            v = h @ wv[kvh * hd:(kvh + 1) * hd].T
            scores = (q @ k.transpose(1, 2)) / math.sqrt(hd)
            scores = scores.masked_fill(~causal, float("-inf"))
            heads.append(torch.softmax(scores, dim=-1) @ v)
        x = x + torch.cat(heads, dim=-1) @ p["proj.weight"].T
        h = rms_norm(x, p["ln2.weight"])
        first, second = (h @ p["fc1.weight"].T).chunk(2, dim=-1)
        g, u = (first, second) if gate == "first" else (second, first)
        x = x + (g * torch.sigmoid(g) * u) @ p["fc2.weight"].T
    return rms_norm(x, params["ln_f.weight"]) @ params["head.weight"].T
