"""The llama workload's spec: its size, shape rules and per-step counts (no torch).

The model itself is in :mod:`tebench.worker.models.llama`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tebench.schema.knobs import MAX_DIM, knob
from tebench.workloads import zipf_markov
from tebench.workloads.gpt_spec import MAX_STRIDE, TASK_DOC, TASKS, CausalLMSpec
from tebench.workloads.spec import SizeError, divisible_by_16, positive


@dataclass(frozen=True)
class LlamaSize:
    """Shape of a Llama case. The defaults are a ~1B shape (d2048, 16 layers, 32/8 heads, ffn 8192)."""

    vocab: int = knob(32000, "Vocabulary size (the LM head's width).", min=MAX_STRIDE + 1, max=2**20)
    d_model: int = knob(2048, "Hidden width of the model.", min=1, max=2**17)
    heads: int = knob(32, "Query heads; must divide d_model, with an even head size (RoPE).", min=1, max=1024)
    kv_heads: int = knob(8, "Key/value heads (grouped-query attention); must divide heads.", min=1, max=1024)
    layers: int = knob(16, "Transformer blocks.", min=1, max=1024)
    ffn: int = knob(8192, "Width of the SwiGLU MLP (each of its gate and up projections).", min=1, max=2**19)
    seq: int = knob(2048, "Sequence length (the validation prompts with half of it).", min=4, max=MAX_DIM)
    batch: int = knob(4, "Sequences per step.", min=1, max=2**16)
    rope_theta: float = knob(500000.0, "RoPE base: 10000 in Llama 2, 500000 in Llama 3.", min=1.000001, max=1e12)
    task_vocab: int = knob(0, "Tokens the arithmetic sequences use, counting from 0 (0: all of vocab). The model "
                              "still predicts over all of vocab, but a few dozen steps cannot teach the successor "
                              "of each of 32k tokens. Arithmetic task only.", min=0, max=2**20, optional=True)
    task: str = knob("arithmetic", TASK_DOC, choices=TASKS, optional=True, omit_default=True)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


class LlamaSpec(CausalLMSpec[LlamaSize]):
    """The Llama causal-LM workload, as the parent process sees it."""

    name = "llama"
    size_type = LlamaSize
    description = ("Llama-style causal LM (RMSNorm, RoPE, GQA, SwiGLU) on arithmetic sequences (greedy generation) "
                   "or the zipf-markov source (held-out loss against a known floor)")

    def check(self, s: LlamaSize) -> None:
        positive(s, "vocab", "d_model", "heads", "kv_heads", "layers", "ffn", "seq", "batch")
        if s.d_model % s.heads:
            raise SizeError("d_model", s.d_model, f"d_model={s.d_model} is not divisible by heads={s.heads}")
        if s.heads % s.kv_heads:
            raise SizeError("kv_heads", s.kv_heads, f"heads={s.heads} is not divisible by kv_heads={s.kv_heads}")
        if s.head_dim % 2:
            raise SizeError("heads", s.heads, f"head_dim = d_model/heads = {s.head_dim} must be even for RoPE")
        theta = s.rope_theta
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 1:
            raise SizeError("rope_theta", theta, f"'rope_theta' must be a number above 1, got {theta!r}")
        if s.vocab <= MAX_STRIDE:
            raise SizeError("vocab", s.vocab, f"vocab must exceed the largest stride ({MAX_STRIDE})")
        if s.task_vocab and not MAX_STRIDE < s.task_vocab <= s.vocab:
            raise SizeError("task_vocab", s.task_vocab,
                            f"task_vocab must be 0 (all of vocab) or between {MAX_STRIDE + 1} and vocab={s.vocab}")
        if s.task_vocab and s.task == zipf_markov.NAME:
            raise SizeError("task_vocab", s.task_vocab,
                            "task_vocab narrows the arithmetic task only; the zipf-markov source uses all of vocab")
        if s.seq < 4:
            raise SizeError("seq", s.seq, "seq must be at least 4 (the validation prompts half of it)")

    def fp8_problem(self, s: LlamaSize) -> str | None:
        return divisible_by_16(tokens=s.batch * s.seq, d_model=s.d_model, ffn=s.ffn,
                               qkv=(s.heads + 2 * s.kv_heads) * s.head_dim)

    def flops_per_step(self, s: LlamaSize) -> float:
        """Training FLOPs per step: 6 x matmul parameters x tokens, plus attention.

        Matmul parameters per layer are the real ones: Q and the output
        projection ``d_model x heads*head_dim`` each, K and V only
        ``d_model x kv_heads*head_dim`` each (GQA), and SwiGLU's three
        ``d_model x ffn`` matrices; plus the LM head. Attention scores and the
        weighted sum are counted for every query head, 12 * layers * seq *
        heads*head_dim per token (PaLM, appendix B, without halving for the
        causal mask): sharing K/V saves projections, not attention FLOPs.
        """
        q_dim, kv_dim = s.heads * s.head_dim, s.kv_heads * s.head_dim
        per_layer = 2 * s.d_model * q_dim + 2 * s.d_model * kv_dim + 3 * s.d_model * s.ffn
        matmul_params = s.layers * per_layer + s.d_model * s.vocab
        tokens = self.tokens_per_step(s)
        return 6.0 * matmul_params * tokens + 12.0 * s.layers * q_dim * s.seq * tokens
