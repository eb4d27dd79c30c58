"""Deterministic, cost-balanced partition of a matrix into N shards.

Every shard computes the same partition from the same matrix, so N jobs on N
machines (a Slurm array, a CI matrix, a Kubernetes Indexed Job) each run their
part with no coordination; together the shards are the whole matrix and no
case runs twice.
"""

from __future__ import annotations

import re

import heapq
from typing import TYPE_CHECKING

from tebench.plan.modes import MODES
from tebench.workloads import SPECS, size_of
from tebench.errors import TebenchError

if TYPE_CHECKING:
    from tebench.schema.records import Case
    from tebench.schema.environment import Environment

# Rough constants: only the *relative* cost of cases matters for balance, and
# the same numbers must be used on every machine, so they are not measured.
PROCESS_OVERHEAD_S = 15.0
COMPILE_OVERHEAD_S = 45.0
NOMINAL_FLOPS = 2e14
MAX_SHARDS = 10_000
"""Most shards a matrix is split into (--shard I/N), and so a merge joins: far beyond any real use,
it bounds what a typo, or a damaged header's shard count, can make tebench allocate."""


class ShardError(TebenchError, ValueError):
    """A --shard value that is not I/N with 1 <= I <= N."""


def parse(spec: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4); shards are numbered from 1."""
    # ASCII digits only: int() would also take "２/２", " 1", "+1" and "1_0".
    match = re.fullmatch(r"([0-9]+)/([0-9]+)", spec)
    if match is None:
        raise ShardError(f"--shard {spec!r}: expected I/N in digits 0-9, e.g. 1/4")
    # Counted in digits first: int() refuses a number of thousands of digits, and none is a real shard number.
    i_digits, n_digits = (m.lstrip("0") for m in (match[1], match[2]))
    if len(n_digits) > len(str(MAX_SHARDS)) or int(match[2]) > MAX_SHARDS:
        raise ShardError(f"--shard {spec}: at most {MAX_SHARDS} shards")
    n = int(match[2])
    i = int(match[1]) if len(i_digits) <= len(n_digits) else n + 1
    if not 1 <= i <= n:
        raise ShardError(f"--shard {spec!r}: need 1 <= I <= N")
    return i, n


def estimate_cost(case: Case) -> float:
    """Estimated seconds for a case: start-up, compilation and its FLOPs at a nominal rate."""
    wl = SPECS[case.workload]
    steps = case.settings.steps + case.settings.warmup
    cost = PROCESS_OVERHEAD_S + wl.flops_per_step(size_of(case)) * steps / NOMINAL_FLOPS
    if MODES[case.mode].compile:
        cost += COMPILE_OVERHEAD_S
    return cost


GPU_EFFICIENCY = 0.4
"""Share of the datasheet peak a training step reaches, for time estimates (0.5-0.6 measured at d2048-d4096 on
an H200; small cases reach far less, and their start-up dominates anyway)."""
CPU_EFFICIENCY = 0.3
"""Share of the probe's matmul rate a CPU training step reaches (element-wise work, small matmuls)."""
CPU_PROCESS_S, CPU_COMPILE_S = 3.0, 4.0
"""A CPU case's start-up and torch.compile's extra, as the smoke preset measured them on the 2-core
development CPU (tests/fixtures/cpu-smoke.jsonl: 3.1-3.2 s a case, 7.1 s compiled)."""


def estimate_seconds(case: Case, env: "Environment") -> float:
    """Seconds ``case`` may take on ``env``, from the machine's probe (a rough guide, shown by ``tebench list``).

    Unlike :func:`estimate_cost` (the same numbers on every machine, for sharding) this uses what the
    probe knows: the GPU's datasheet peak (fp32 for PT-FP32), or the CPU's measured matmul rate.
    """
    wl = SPECS[case.workload]
    steps = case.settings.steps + case.settings.warmup
    peak = env.peak_tflops
    key = "fp32" if not (MODES[case.mode].amp or MODES[case.mode].family == "te") else "bf16"
    peak_rate = peak.rate(key) if peak is not None else None
    if env.device_type == "cuda" and peak_rate:
        rate = peak_rate * 1e12 * GPU_EFFICIENCY
    elif env.device_type == "cpu" and env.cpu_gflops:
        rate = env.cpu_gflops * 1e9 * CPU_EFFICIENCY
    else:
        rate = NOMINAL_FLOPS
    cpu = env.device_type == "cpu"
    cost = (CPU_PROCESS_S if cpu else PROCESS_OVERHEAD_S) + wl.flops_per_step(size_of(case)) * steps / rate
    if MODES[case.mode].compile:
        cost += CPU_COMPILE_S if cpu else COMPILE_OVERHEAD_S
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
