"""Shards are disjoint, complete, deterministic and balanced."""

from __future__ import annotations

import pytest

from tebench.plan import matrix, shards as shard
from tebench.plan.matrix import iter_cases


@pytest.mark.parametrize("preset", ["smoke", "tutorial", "nightly", "crossover", "gpu-smoke"])
@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_shards_partition_the_matrix(preset, n):
    cases = matrix.reference_order(list(iter_cases(matrix.load(preset, is_preset=True))))
    parts = [shard.select(cases, i, n) for i in range(1, n + 1)]
    ids = [c.id for part in parts for c in part]
    assert sorted(ids) == sorted(c.id for c in cases)
    assert len(ids) == len(set(ids))
    # Deterministic: the same cases give the same shards, in the same order.
    assert parts == [shard.select(cases, i, n) for i in range(1, n + 1)]
    # Membership does not depend on the input order (every job must agree on it) ...
    reordered = [shard.select(list(reversed(cases)), i, n) for i in range(1, n + 1)]
    assert [sorted(c.id for c in p) for p in parts] == [sorted(c.id for c in p) for p in reordered]
    # ... and within a shard the cases keep the order they were given in (references first).
    position = {c.id: k for k, c in enumerate(cases)}
    for part in parts:
        assert [position[c.id] for c in part] == sorted(position[c.id] for c in part)


def test_partition_does_not_depend_on_input_order():
    cases = list(iter_cases(matrix.load("nightly", is_preset=True)))
    a = [sorted(c.id for c in p) for p in shard.partition(cases, 3)]
    b = [sorted(c.id for c in p) for p in shard.partition(list(reversed(cases)), 3)]
    assert a == b


def test_balance_is_within_the_largest_case():
    cases = list(iter_cases(matrix.load("nightly", is_preset=True)))
    loads = [sum(shard.estimate_cost(c) for c in p) for p in shard.partition(cases, 4)]
    assert max(loads) - min(loads) <= max(shard.estimate_cost(c) for c in cases)


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1", "a/b", "1/0",
                                  # int() takes each of these; a shard number is ASCII digits only
                                  "\uff12/\uff12", "1_0/20", " 1/2", "1/2 ", "+1/2"])
def test_bad_shard_spec(spec):
    with pytest.raises(shard.ShardError):
        shard.parse(spec)
