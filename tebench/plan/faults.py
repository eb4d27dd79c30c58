"""Test hooks: faults and deliberately wrong models, switched on by environment.

``TEBENCH_TEST_FAULT="GLOB=KIND;GLOB=KIND"`` makes every case whose id matches
``GLOB`` misbehave. Process faults test the runner's isolation; mutations
build a model that is subtly *wrong* but still trains, so the loss-parity
verdicts can be shown to catch it (the README's mutation table). Nothing here
imports torch: the parent checks the variable before a run (:func:`check`), and the
worker applies it.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Mapping

FAULT_ENV = "TEBENCH_TEST_FAULT"

PROCESS_FAULTS = {
    "crash": "the case process dies of SIGSEGV before it starts",
    "hang": "the case process sleeps until the timeout ends it",
    "oom": "the case raises an out-of-memory error, as its device's allocator does (CUDA: OutOfMemoryError; CPU: "
           "the allocator's RuntimeError)",
    "diverge": "the last recorded loss becomes NaN",
}

# Every mutation trains without an error; only the verdicts can tell.
MUTATIONS = {
    "no-causal": "attention without the causal mask: each position sees the tokens it must predict",
    "swap-layout": "[batch, seq] fed where [seq, batch] is expected: attention runs across the batch "
                   "(te.TransformerLayer's default layout fed batch-first)",
    "freeze-layer": "the first block's parameters never update",
    "lr-x10": "the learning rate is 10x the case's",
    "leak-next": "each position's input also carries the next position's: the model sees the token it must "
                 "predict (a target shifted the wrong way)",
    "init-default": "the model starts from PyTorch's (or TE's) default initialization instead of the canonical "
                    "weights every other mode starts from",
    # Same structure, different training: the model keeps its shape, its parameters and its FP8 proof, and
    # trains a few per cent better or worse than its reference. Only a verdict with a tight margin tells.
    "norm-eps": "every normalization's epsilon is 1.0 instead of its default (1e-5): a numerics change",
    "dropout-on": "dropout 0.2 on the block stack's input left on in training: a regularization left on",
    "leak-small": "one position in 16 also carries the next position's input, the token it must predict: a small "
                  "leak",
    "lr-quarter": "the learning rate is a quarter of the case's: an optimizer hyperparameter",
    "fp8-scale-one": "delayed-scaling FP8 keeps the scaling factor at 1 (no amax-based scaling)",
    "fp8-bypass": "the FP8 layers run in high precision (TE's each enter FP8 autocast disabled; torchao's "
                  "Float8Linear run nn.Linear's forward): every GEMM runs in high precision while the case is "
                  "labelled FP8",
    "fp8-partial": "every TE block but the first runs with FP8 disabled: the model trains, some GEMMs run in "
                   "FP8, and the case must not pass as an FP8 result (its FP8 proof is partial)",
}

KINDS = {**PROCESS_FAULTS, **MUTATIONS}
SUBTLE = ("norm-eps", "dropout-on", "leak-small", "lr-quarter")
"""The mutations that keep the model's structure and train measurably differently (each a few per cent)."""


def _items(environ: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """``TEBENCH_TEST_FAULT``'s items as (glob, kind), in order; ValueError naming the first item whose kind is unknown
    (or that has no ``=``)."""
    spec = (os.environ if environ is None else environ).get(FAULT_ENV, "")
    items = []
    for item in filter(None, spec.split(";")):
        pattern, eq, kind = item.rpartition("=")
        if not eq or not pattern:
            raise ValueError(f"{FAULT_ENV}={spec!r}: item {item!r} is not GLOB=KIND (e.g. 'gpt/*/PT-AMP=leak-next')")
        if kind not in KINDS:
            raise ValueError(f"{FAULT_ENV}: unknown kind {kind!r} in {item!r} (known: {', '.join(KINDS)})")
        items.append((pattern, kind))
    return items


def check(environ: Mapping[str, str] | None = None) -> None:
    """ValueError naming the first item of ``TEBENCH_TEST_FAULT`` whose kind is unknown (or that has no ``=``).

    The parent checks it before a run: a typo made every case's worker fail with a traceback, and the run
    ended with exit 0."""
    _items(environ)


def fault_for(case_id: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The fault or mutation asked for ``case_id``, or None.

    The first matching ``GLOB=KIND`` item wins. An unknown kind is an error, so
    a typo cannot silently leave a self-test unmutated.
    """
    return next((kind for pattern, kind in _items(environ) if fnmatch.fnmatchcase(case_id, pattern)), None)


def mutation_for(case_id: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The mutation asked for ``case_id`` (process faults are not mutations)."""
    kind = fault_for(case_id, environ)
    return kind if kind in MUTATIONS else None
