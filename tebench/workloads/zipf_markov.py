"""The ``zipf-markov`` language: a seeded token source whose entropy rate tebench computes.

The next token is

* the current token's fixed *successor* with probability :data:`FOLLOW`,
* a *copy* of the token before the current one with probability :data:`COPY`,
* otherwise a draw from a Zipf(:data:`ZIPF_S`) distribution over the whole
  vocabulary (token ``k`` has rank ``k``).

The successor map is one permutation of the vocabulary per vocabulary size,
the same for every seed and mode: the seed moves the sampled sequences and the
initial weights, never the language. The copy makes attention pay: a model
that cannot see its own sequence's previous token (attention run across the
batch, the layout mistake) stays above the floor by about ``COPY`` x the
Zipf entropy.

Why this task: the arithmetic sequences the GPT workload trained on learn in a
sharp drop whose step is chaotic (seed and numerics move it) and barely move at
a 32k vocabulary in a nightly's steps, so verdicts built on their curves were
luck at small sizes and empty at large ones. This source has a smooth curve and
a *known floor*: no model can predict it better than its entropy rate (the
expected cross-entropy of the true next-token distribution), so

* a loss below the floor is impossible without a leak (the model saw what it
  must predict), and
* "progress toward the floor" is a number a reader understands.

The source is a second-order Markov chain, so the rate is the mean of the
exact conditional entropy of the next token given the two before it, over the
chain's stationary pair distribution. That distribution has vocab**2 states,
so the mean is taken over a long seeded simulation (:data:`FLOOR_TOKENS`
tokens; its standard error, well under 0.01 nats, is kept with the floor).

Every training batch is a fresh draw from the source, so the loss a step
computes before its update is a held-out loss of the weights it starts from.
Sequences start after :data:`BURN_IN` unseen tokens, so every predicted token
is drawn from the stationary chain; the first predicted one lacks one token of
context, which can only raise the loss a model can reach.

Torch-free (numpy): the parent computes the floor from the case's dimensions;
the worker draws sequences from the same definitions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

NAME = "zipf-markov"
"""The task's name in a matrix file (``task = "zipf-markov"``)."""
FOLLOW = 0.4
"""Probability that the next token is the current token's successor."""
COPY = 0.3
"""Probability that the next token repeats the token before the current one."""
DRAW = 1.0 - FOLLOW - COPY
"""Probability of a fresh Zipf draw."""
ZIPF_S = 1.1
"""Exponent of the Zipf draw."""
SOURCE_SEED = 20261203
"""Seed of the successor permutation: fixed, so that every seed and mode learns one language."""
BURN_IN = 32
"""Unseen tokens before a sequence starts: the chain forgets its start by DRAW**-32 (below 1e-5)."""
FLOOR_TOKENS = 256 * 4096
"""Tokens of the simulation that the floor is averaged over."""
FLOOR_SEED = 7
"""Seed of that simulation (not of any training data)."""


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False  # cached and shared: a caller must not change it
    return a


@lru_cache(maxsize=8)
def zipf_probabilities(vocab: int) -> np.ndarray:
    """P(token k) of the Zipf draw: proportional to 1 / (k + 1) ** ZIPF_S (read-only, cached)."""
    weights = 1.0 / np.arange(1, vocab + 1, dtype=np.float64) ** ZIPF_S
    return _frozen(weights / weights.sum())


@lru_cache(maxsize=8)
def successors(vocab: int) -> np.ndarray:
    """The successor of every token: one fixed permutation of the vocabulary (read-only, cached)."""
    return _frozen(np.random.Generator(np.random.PCG64(SOURCE_SEED)).permutation(vocab))


@lru_cache(maxsize=8)
def unigram(vocab: int) -> np.ndarray:
    """The distribution of a token anywhere in a sequence.

    pi = FOLLOW * (pi pushed through the successor map) + COPY * pi + DRAW * zipf,
    i.e. pi = (FOLLOW * push(pi) + DRAW * zipf) / (1 - COPY): a contraction by
    FOLLOW / (1 - COPY), iterated from zipf until it stops moving.
    """
    zipf = zipf_probabilities(vocab)
    succ = successors(vocab)
    pi = zipf.copy()
    for _ in range(200):
        nxt = DRAW * zipf
        nxt[succ] += FOLLOW * pi  # a permutation: no index repeats
        nxt /= 1.0 - COPY
        if np.max(np.abs(nxt - pi)) < 1e-15:
            pi = nxt
            break
        pi = nxt
    return _frozen(pi / pi.sum())


def conditional_entropy(before: np.ndarray, current: np.ndarray, vocab: int) -> np.ndarray:
    """Exact entropy (nats) of the next token given the token ``before`` the ``current`` one, elementwise.

    The distribution is DRAW * zipf with two spikes added, FOLLOW at the
    successor s of ``current`` and COPY at ``before`` (one spike of both when
    they are the same token): the Zipf part's entropy sum with those terms
    replaced.
    """
    zipf = zipf_probabilities(vocab)
    base = DRAW * zipf * np.log(DRAW * zipf)
    total = float(base.sum())
    s = successors(vocab)[current]
    c = before

    def plogp(p: np.ndarray) -> np.ndarray:
        return p * np.log(p)

    q_s = FOLLOW + DRAW * zipf[s]
    q_c = COPY + DRAW * zipf[c]
    apart = total - base[s] - base[c] + plogp(q_s) + plogp(q_c)
    together = total - base[s] + plogp(FOLLOW + COPY + DRAW * zipf[s])
    return -np.where(s == c, together, apart)


def simulate(vocab: int, rows: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` sequences of ``length`` tokens from the source (numpy; the floor's simulation)."""
    zipf = zipf_probabilities(vocab)
    succ = successors(vocab)
    pi = unigram(vocab)
    total = length + BURN_IN
    out = np.empty((rows, total), dtype=np.int64)
    out[:, 0] = rng.choice(vocab, size=rows, p=pi)
    out[:, 1] = rng.choice(vocab, size=rows, p=pi)
    draws = rng.choice(vocab, size=(rows, total), p=zipf)
    action = rng.random((rows, total))
    for t in range(2, total):
        out[:, t] = np.where(action[:, t] < FOLLOW, succ[out[:, t - 1]],
                             np.where(action[:, t] < FOLLOW + COPY, out[:, t - 2], draws[:, t]))
    return out[:, BURN_IN:]


@dataclass(frozen=True)
class Floor:
    """What the source lets a model reach, in nats per predicted token."""

    entropy_rate: float
    """The floor: the source's entropy rate (mean exact conditional entropy of the next token)."""
    standard_error: float
    """Of ``entropy_rate``: the simulation's sampling error (between rows)."""
    unigram_entropy: float
    """What a model that learned token frequencies only (no context) reaches."""
    uniform: float
    """ln(vocab): the loss of a model that predicts every token alike (about where training starts)."""


@lru_cache(maxsize=32)
def floor(vocab: int) -> Floor:
    """The source's entropy rate at ``vocab`` tokens, with its standard error and two reference points."""
    if vocab < 2:
        raise ValueError(f"the zipf-markov source needs at least 2 tokens, got {vocab}")
    rows = 256
    seqs = simulate(vocab, rows, FLOOR_TOKENS // rows, np.random.Generator(np.random.PCG64(FLOOR_SEED)))
    h = conditional_entropy(seqs[:, :-2], seqs[:, 1:-1], vocab)
    per_row = h.mean(axis=1)
    pi = unigram(vocab)
    return Floor(entropy_rate=float(per_row.mean()), standard_error=float(per_row.std(ddof=1) / math.sqrt(rows)),
                 unigram_entropy=float(-np.sum(pi * np.log(pi))), uniform=math.log(vocab))


def progress(start: float, loss: float, rate: float) -> float:
    """How far ``loss`` has come from ``start`` toward the floor ``rate``: 0 at the start, 1 at the floor."""
    span = start - rate
    return (start - loss) / span if span > 0 else float("nan")
