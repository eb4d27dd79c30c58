"""Which cases run, in which order and rounds, and why a case will be skipped (its gate)."""

from __future__ import annotations

from dataclasses import dataclass
from tebench.plan import shards as shard
from tebench.plan.environment import Environment
from tebench.errors import RunError, StorageError  # noqa: F401  (raised here, caught by the CLI)
from tebench.plan.gates import gate_case
from tebench.plan.matrix import Case, Matrix, iter_cases, reference_order


@dataclass(frozen=True)
class Planned:
    """A case in a given round, with the reason it will be skipped (if any)."""

    case: Case
    round: int
    skip: str | None


def select_cases(matrix: Matrix, only: list[str] | None = None,
                 shard_spec: tuple[int, int] | None = None) -> list[Case]:
    """The matrix's cases in run order, filtered and sharded."""
    import fnmatch

    cases = reference_order(list(iter_cases(matrix)))
    if only:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.id, pat) for pat in only)]
    if shard_spec:
        cases = shard.select(cases, *shard_spec)
    return cases


def plan(cases: list[Case], env: Environment, rounds: int) -> list[Planned]:
    """Rounds interleaved (all cases of round 0, then round 1, ...), as asv does,
    so slow drift of the machine spreads over every mode instead of biasing one."""
    gates = {c.id: gate_case(c, env) for c in cases}
    return [Planned(c, r, gates[c.id]) for r in range(rounds) for c in cases]
