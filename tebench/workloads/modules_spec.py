"""The module workload's spec: its size, shape rules and per-step counts (no torch).

The modules themselves are in :mod:`tebench.worker.models.modules`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tebench.schema.knobs import MAX_DIM, knob
from tebench.workloads.spec import SizeError, divisible_by_16, positive

MODULES = ("linear", "layernorm", "layernorm_linear", "layernorm_mlp", "transformer_layer")


@dataclass(frozen=True)
class ModuleSize:
    """One module at one shape. ``ffn`` and ``heads`` of 0 mean 4*hidden and hidden/64."""

    module: str = knob("linear", "Which module is timed.", choices=MODULES)
    hidden: int = knob(1024, "Hidden width (input and output features).", min=1, max=2**17)
    tokens: int = knob(4096, "Tokens per step (rows of the input).", min=1, max=2**24)
    ffn: int = knob(0, "MLP width of layernorm_mlp / transformer_layer; 0 means 4 * hidden.",
                    min=0, max=2**19, optional=True)
    heads: int = knob(0, "Attention heads of transformer_layer; 0 means hidden / 64.", min=0, max=1024, optional=True)
    seq: int = knob(512, "Sequence length of transformer_layer (batch = tokens / seq).", min=1, max=MAX_DIM,
                    optional=True)

    def resolved(self) -> "ModuleSize":
        return replace(self, ffn=self.ffn or 4 * self.hidden, heads=self.heads or max(1, self.hidden // 64))


class ModuleSpec:
    """Single-module forward+backward, as the parent process sees it."""

    name = "module"
    kind = "module"
    size_type = ModuleSize
    description = "one TE module vs its PyTorch equivalent (forward+backward+step)"

    def check(self, s: ModuleSize) -> None:
        if s.module not in MODULES:
            raise SizeError("module", s.module, f"unknown module '{s.module}' (known: {', '.join(MODULES)})")
        positive(s, "hidden", "tokens", "seq")
        r = s.resolved()
        if s.module == "transformer_layer":
            if s.tokens % s.seq:
                raise SizeError("tokens", s.tokens, f"tokens={s.tokens} is not divisible by seq={s.seq}")
            if r.hidden % r.heads:
                raise SizeError("hidden", s.hidden, f"hidden={s.hidden} is not divisible by heads={r.heads}")

    def fp8_problem(self, s: ModuleSize) -> str | None:
        r = s.resolved()
        return divisible_by_16(tokens=r.tokens, hidden=r.hidden, ffn=r.ffn)

    def tokens_per_step(self, s: ModuleSize) -> int:
        return s.tokens

    def flops_per_step(self, s: ModuleSize) -> float:
        r = s.resolved()
        t, h = r.tokens, r.hidden
        per_module = {
            "linear": 6.0 * t * h * h,
            "layernorm": 0.0,  # memory-bound: no meaningful FLOP rate
            "layernorm_linear": 6.0 * t * h * h,
            "layernorm_mlp": 12.0 * t * h * r.ffn,
            "transformer_layer": 6.0 * t * (4 * h * h + 2 * h * r.ffn) + 12.0 * h * r.seq * t,
        }
        return per_module[r.module]
