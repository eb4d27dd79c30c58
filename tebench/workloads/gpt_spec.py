"""The GPT workload's spec: its size, shape rules and per-step counts (no torch).

The model itself is in :mod:`tebench.worker.models.gpt`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from tebench.schema.knobs import MAX_DIM, knob
from tebench.workloads import zipf_markov
from tebench.workloads.spec import SizeError, divisible_by_16, positive

MAX_STRIDE = 6
"""Largest stride of the arithmetic training sequences."""
TASKS = ("arithmetic", zipf_markov.NAME)
"""What the GPT and Llama workloads learn: arithmetic sequences (validated by greedy generation) or the
zipf-markov source (a known floor; validated by held-out loss): see :mod:`tebench.workloads.zipf_markov`."""
TASK_DOC = ("What the model learns: arithmetic (token[t] = phase + stride*t mod vocab; validated by greedy "
            "generation, the seed tutorials' task) or zipf-markov (a seeded source with an exact entropy rate, "
            "the loss floor; validated by held-out loss; smooth curves at any vocabulary).")


@dataclass(frozen=True)
class GPTSize:
    """Shape of a GPT case. The defaults are the original TE tutorial's."""

    vocab: int = knob(96, "Vocabulary size (must exceed the largest stride, 6).", min=MAX_STRIDE + 1, max=MAX_DIM)
    d_model: int = knob(768, "Hidden width of the model.", min=1, max=2**17)
    heads: int = knob(12, "Attention heads; must divide d_model.", min=1, max=1024)
    layers: int = knob(4, "Transformer blocks.", min=1, max=1024)
    ffn: int = knob(3072, "Hidden width of each block's MLP.", min=1, max=2**19)
    seq: int = knob(256, "Sequence length (the validation prompts with half of it).", min=4, max=MAX_DIM)
    batch: int = knob(16, "Sequences per step.", min=1, max=2**16)
    # Left out of a case's dims while it is the default: records and case settings of arithmetic runs stay
    # exactly as they were before the task existed (compare and history match them with older runs).
    task: str = knob("arithmetic", TASK_DOC, choices=TASKS, optional=True, omit_default=True)


class LMSize(Protocol):
    """The fields of a size that the causal-LM task and its weights' init read (GPTSize and LlamaSize have them)."""

    @property
    def vocab(self) -> int: ...
    @property
    def seq(self) -> int: ...
    @property
    def batch(self) -> int: ...
    @property
    def task(self) -> str: ...
    @property
    def layers(self) -> int: ...


SizeT = TypeVar("SizeT", bound=LMSize)


class CausalLMSpec(Generic[SizeT]):
    """What the GPT and Llama specs share: the task (arithmetic or zipf-markov) on a size of their own."""

    kind = "model"
    size_type: type[SizeT]

    def loss_floor(self, s: SizeT) -> zipf_markov.Floor | None:
        """The task's exact loss floor (nats per token), or None where the task has none worth stating."""
        return zipf_markov.floor(s.vocab) if s.task == zipf_markov.NAME else None

    def tokens_per_step(self, s: SizeT) -> int:
        return s.batch * s.seq


class GPTSpec(CausalLMSpec[GPTSize]):
    """The GPT causal-LM workload, as the parent process sees it."""

    name = "gpt"
    size_type = GPTSize
    description = ("causal LM on arithmetic sequences (greedy generation) or the zipf-markov source "
                   "(held-out loss against a known floor)")

    def check(self, s: GPTSize) -> None:
        positive(s, "vocab", "d_model", "heads", "layers", "ffn", "seq", "batch")
        if s.d_model % s.heads:
            raise SizeError("d_model", s.d_model, f"d_model={s.d_model} is not divisible by heads={s.heads}")
        if s.vocab <= MAX_STRIDE:
            raise SizeError("vocab", s.vocab, f"vocab must exceed the largest stride ({MAX_STRIDE})")
        if s.seq < 4:
            raise SizeError("seq", s.seq, "seq must be at least 4 (the validation prompts half of it)")

    def fp8_problem(self, s: GPTSize) -> str | None:
        return divisible_by_16(tokens=s.batch * s.seq, d_model=s.d_model, ffn=s.ffn)

    def flops_per_step(self, s: GPTSize) -> float:
        """Training FLOPs per step: 6 x matmul parameters x tokens, plus attention.

        Attention is counted as 12 * layers * d_model * seq per token (PaLM,
        appendix B), i.e. without halving for the causal mask.
        """
        matmul_params = s.layers * (4 * s.d_model**2 + 2 * s.d_model * s.ffn) + s.d_model * s.vocab
        tokens = self.tokens_per_step(s)
        return 6.0 * matmul_params * tokens + 12.0 * s.layers * s.d_model * s.seq * tokens
