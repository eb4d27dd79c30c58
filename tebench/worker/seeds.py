"""Every seed tebench derives from a case's ``seed`` setting, in one table.

Loss parity needs every mode of a workload to start from the same weights and
see the same batches, and validation needs data that training never saw. Each
stream of random numbers therefore gets its own seed, derived from the case's
seed by a fixed rule per *purpose*. The rules are the arithmetic tebench has
always used: stored results and the parity references in them were trained on
the streams these numbers produce, so a rule never changes; a new stream is a
new purpose. Torch-free: only integers here.

Purposes (``base`` is the case's seed):

``batch`` -- ``base * 7919 + index``
    training batch ``index`` (the module workload's one fixed batch is index
    0); with the prime factor, the streams of neighbouring base seeds do
    not overlap below 7919 batches.
``held-out`` -- ``base + 999_983``
    validation data that no training batch shares: the GPT and Llama
    workloads' validation prompts, the distillation workload's held-out tokens.
``rank`` -- ``base + 7_777 * index``
    the data of data-parallel rank ``index``: each rank trains on its own
    batches; rank 0 keeps ``base``, so its loss curve stays comparable with
    the single-GPU reference.
``teacher`` -- ``base + 1``
    the distillation workload's frozen teacher, a function of the seed that
    differs from the student's initial weights.
``replica`` -- ``base + 104_729 * index + 31_337``
    the seed of the reference's extra training run ``index`` (1, 2, …: the
    ``reference_seeds`` setting): other initial weights and other batches of
    the same task, for the seed spread that parity's equivalence margin needs.
``twin`` -- ``base + 15_485_863 * index + 65_537``
    the signs of the reference's twin run ``index`` (1, 2, …: the
    ``reference_twins`` setting): the case's own weights, each moved by
    ``1 ± 2**-9``, and its own batches, for the paired noise floor.
``param`` -- ``(base * 1_000_003 + index) % (2**63 - 1)``
    one parameter tensor's initial values; ``index`` is the CRC-32 of its
    canonical name, so both model families draw the same values by name.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_SEED = 2**63 - 1
"""Every derived seed is reduced modulo this, a valid ``torch.Generator`` seed (``param`` always
was). From the seeds a matrix allows (below 2**31) no rule comes near it, so for them the
modulo changes no number."""


@dataclass(frozen=True)
class Rule:
    """``seed = (base * scale + offset + step * index) % MAX_SEED``."""

    scale: int
    offset: int
    step: int
    """How the index moves the seed; 0 for purposes that take no index."""


PURPOSES: dict[str, Rule] = {
    "batch": Rule(7919, 0, 1),
    "held-out": Rule(1, 999_983, 0),
    "rank": Rule(1, 0, 7_777),
    "teacher": Rule(1, 1, 0),
    "param": Rule(1_000_003, 0, 1),
    "replica": Rule(1, 31_337, 104_729),
    "twin": Rule(1, 65_537, 15_485_863),
}


def derive_seed(base: int, purpose: str, index: int = 0) -> int:
    """The seed of the random stream ``purpose`` (see :data:`PURPOSES`) for the case seed ``base``.

    Raises ValueError for an unknown purpose, and for an index given to a
    purpose that takes none (it would be silently ignored otherwise).
    """
    rule = PURPOSES.get(purpose)
    if rule is None:
        raise ValueError(f"unknown seed purpose {purpose!r} (known: {', '.join(PURPOSES)})")
    if index and not rule.step:
        raise ValueError(f"seed purpose {purpose!r} takes no index (got {index})")
    return (base * rule.scale + rule.offset + rule.step * index) % MAX_SEED
