"""The zipf-markov source: its floor is the entropy rate of what the worker really draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tebench.workloads import zipf_markov as zm
from tebench.worker.models.gpt import zipf_markov_sequences


@pytest.mark.parametrize("vocab,rate", [(96, 1.997), (32000, 2.896), (128256, 3.060)])
def test_floor_values(vocab, rate):
    """The floors the presets and docs quote (nats per token)."""
    floor = zm.floor(vocab)
    assert floor.entropy_rate == pytest.approx(rate, abs=0.002)
    assert floor.standard_error < 0.001
    assert floor.entropy_rate < floor.unigram_entropy < floor.uniform == pytest.approx(math.log(vocab))


def test_floor_is_the_cross_entropy_of_the_true_distribution_on_drawn_sequences():
    """The mean -log P(next | two before) of the worker's own sequences matches the computed rate.

    An independent check of ``conditional_entropy``: here the probabilities are
    built token by token from the source's definition, not from the closed form.
    """
    vocab = 64
    seqs = zipf_markov_sequences(vocab, rows=64, length=512, seed=3).numpy()
    zipf, succ = zm.zipf_probabilities(vocab), zm.successors(vocab)
    before, current, nxt = seqs[:, :-2].ravel(), seqs[:, 1:-1].ravel(), seqs[:, 2:].ravel()
    p = zm.DRAW * zipf[nxt] + zm.FOLLOW * (succ[current] == nxt) + zm.COPY * (before == nxt)
    measured = float(-np.log(p).mean())
    se = float(np.std(-np.log(p)) / math.sqrt(p.size))
    assert measured == pytest.approx(zm.floor(vocab).entropy_rate, abs=4 * se + 0.01)


def test_the_floor_is_a_lower_bound_on_what_a_model_predicting_less_well_gets():
    """The unigram distribution (no context) loses to the floor by a wide margin on drawn sequences."""
    vocab = 64
    seqs = zipf_markov_sequences(vocab, rows=32, length=256, seed=5).numpy()
    unigram_ce = float(-np.log(zm.unigram(vocab)[seqs[:, 2:].ravel()]).mean())
    assert unigram_ce > zm.floor(vocab).entropy_rate + 1.0


def test_worker_sequences_have_the_unigram_distribution():
    vocab = 16
    seqs = zipf_markov_sequences(vocab, rows=64, length=512, seed=11).numpy().ravel()
    freq = np.bincount(seqs, minlength=vocab) / seqs.size
    assert np.abs(freq - zm.unigram(vocab)).max() < 0.02


def test_sequences_are_seeded_and_shaped():
    a = zipf_markov_sequences(96, rows=4, length=33, seed=1)
    assert a.shape == (4, 33) and a.dtype == torch.long and int(a.max()) < 96
    assert torch.equal(a, zipf_markov_sequences(96, rows=4, length=33, seed=1))
    assert not torch.equal(a, zipf_markov_sequences(96, rows=4, length=33, seed=2))


def test_the_language_does_not_depend_on_the_seed():
    """Every seed and mode learns one language: the successor map is fixed per vocabulary."""
    assert np.array_equal(zm.successors(500), zm.successors(500))
    assert sorted(zm.successors(500).tolist()) == list(range(500))


def test_cached_arrays_cannot_be_changed_by_a_caller():
    with pytest.raises(ValueError):
        zm.zipf_probabilities(10)[0] = 1.0


def test_progress():
    assert zm.progress(5.0, 3.0, 1.0) == pytest.approx(0.5)
    assert zm.progress(5.0, 5.5, 1.0) < 0
    assert math.isnan(zm.progress(1.0, 1.0, 2.0))


def test_too_small_a_vocabulary_is_refused():
    with pytest.raises(ValueError, match="at least 2"):
        zm.floor(1)
