"""Deterministic, cost-balanced partition of a matrix into N shards.

Every shard computes the same partition from the same matrix, so N jobs on N
machines (a Slurm array, a CI matrix, a Kubernetes Indexed Job) each run their
part with no coordination; together the shards are the whole matrix and no
case runs twice.
"""

from __future__ import annotations

import heapq

from tebench.plan.matrix import Case
from tebench.plan.modes import MODES
from tebench.workloads import SPECS

# Rough constants: only the *relative* cost of cases matters for balance, and
# the same numbers must be used on every machine, so they are not measured.
PROCESS_OVERHEAD_S = 15.0
COMPILE_OVERHEAD_S = 45.0
NOMINAL_FLOPS = 2e14
MAX_SHARDS = 10_000
"""Most shards a matrix is split into (--shard I/N), and so a merge joins: far beyond any real use,
it bounds what a typo, or a damaged header's shard count, can make tebench allocate."""


class ShardError(ValueError):
    """A --shard value that is not I/N with 1 <= I <= N."""


def parse(spec: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4); shards are numbered from 1."""
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise ShardError(f"--shard {spec!r}: expected I/N, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise ShardError(f"--shard {spec!r}: need 1 <= I <= N")
    return i, n


def estimate_cost(case: Case) -> float:
    """Estimated seconds for a case: start-up, compilation and its FLOPs at a nominal rate."""
    wl = SPECS[case.workload]
    steps = case.settings.steps + case.settings.warmup
    cost = PROCESS_OVERHEAD_S + wl.flops_per_step(case.size_spec) * steps / NOMINAL_FLOPS
    if MODES[case.mode].compile:
        cost += COMPILE_OVERHEAD_S
    return cost


def partition(cases: list[Case], n: int) -> list[list[Case]]:
    """Longest-processing-time-first: the costliest case goes to the least-loaded shard.

    Ties break on the case id, so the result depends on nothing but the cases.
    Within a shard, cases keep their matrix order (references first).
    """
    order = {c.id: i for i, c in enumerate(cases)}
    heap = [(0.0, k) for k in range(n)]
    assigned: list[list[Case]] = [[] for _ in range(n)]
    for case in sorted(cases, key=lambda c: (-estimate_cost(c), c.id)):
        load, k = heapq.heappop(heap)
        assigned[k].append(case)
        heapq.heappush(heap, (load + estimate_cost(case), k))
    return [sorted(group, key=lambda c: order[c.id]) for group in assigned]


def select(cases: list[Case], i: int, n: int) -> list[Case]:
    """The cases of shard ``i`` of ``n`` (1-based)."""
    return partition(cases, n)[i - 1]
