"""Which cases run, in which order and rounds, and why a case will be skipped (its gate)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import fnmatch
import re
from dataclasses import dataclass
from tebench.plan import shards as shard
from tebench.plan.gates import gate_case
from tebench.plan.matrix import Exclusion, Matrix, exclusion_text, iter_cases, reference_order, seeds_for_the_reference

if TYPE_CHECKING:  # the type only: --help builds the parser without pydantic
    from tebench.schema.records import Case
    from tebench.schema.environment import Environment


@dataclass(frozen=True)
class Planned:
    """A case in a given round, with the reason it will be skipped (if any)."""

    case: Case
    round: int
    skip: str | None


def select_cases(matrix: Matrix, only: list[str] | None = None,
                 shard_spec: tuple[int, int] | None = None) -> list[Case]:
    """The matrix's cases in run order, filtered and sharded."""
    cases = reference_order(list(iter_cases(matrix)))
    if only:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.id, pat) for pat in only)]
    cases = seeds_for_the_reference(cases)
    if shard_spec:
        cases = shard.select(cases, *shard_spec)
    return cases


def selected_beyond_shard(matrix: Matrix, only: list[str] | None, shard_spec: tuple[int, int] | None) -> int:
    """How many cases ``--only`` selects when ``--shard`` gives this shard none of them (0 without a shard).

    A CI array of fixed N meets an empty shard when a filter leaves fewer cases than shards: such a shard
    has nothing to do, which is not an error; its run holds a header only, and a merge counts it.
    """
    return len(select_cases(matrix, only)) if shard_spec else 0


def _repaired(glob: str, ids: list[str]) -> str | None:
    """``glob`` with each literal part ("/"-separated, no wildcard) replaced by the closest part of a
    case id, when that changes it and then matches: ``*/PT_AMP`` -> ``*/PT-AMP``."""
    import difflib

    parts = sorted({part for cid in ids for part in cid.split("/")})
    fixed = []
    for part in glob.split("/"):
        if any(ch in part for ch in "*?[") or part in parts:
            fixed.append(part)
        else:
            close = difflib.get_close_matches(part, parts, 1, 0.6)
            fixed.append(close[0] if close else part)
    out = "/".join(fixed)
    return out if out != glob and any(fnmatch.fnmatchcase(cid, out) for cid in ids) else None


def closest_ids(glob: str, ids: list[str], n: int = 3) -> list[str]:
    """The ``n`` ids closest to ``glob``, part by part ("/"-separated): a wildcard part compares only its
    literal text with as much of the id's part, so 'gpt/*/TE-FP9*' ranks TE-FP8 ids first (a whole-string
    match, wildcards dropped, ranked TE-BF16 and PT-FP32 ids above them)."""
    import difflib

    parts = glob.split("/")

    def score(cid: str) -> float:
        theirs = cid.split("/")
        total = 0.0
        for mine, other in zip(parts, theirs):
            literal = re.sub(r"[*?]|\[[^\]]*\]", "", mine)
            if not literal:
                total += 1.0  # a bare wildcard matches any part
                continue
            other = other[:len(literal)] if any(ch in mine for ch in "*?[") else other
            total += difflib.SequenceMatcher(None, literal, other).ratio()
        # Over the glob's parts only: a '*' matches '/' too, so 'TE-FP9*' may stand for 'TE-FP8/delayed…'.
        return total / len(parts)

    ranked = sorted(ids, key=lambda cid: -score(cid))
    return [cid for cid in ranked[:n] if score(cid) >= 0.5]


def unmatched_only(cases: list[Case], only: list[str] | None, excluded: Sequence[Exclusion] = ()) -> list[str]:
    """One line for each ``--only`` glob that matches no id of ``cases``, naming it, the ``[[exclude]]`` rule
    that removed what it names (of ``excluded``), and close ids."""
    ids = [c.id for c in cases]
    out = []
    for glob in only or []:
        if any(fnmatch.fnmatchcase(cid, glob) for cid in ids):
            continue
        hints = [f"excluded by the matrix's [[exclude]] rule {exclusion_text(rule.to_dict())}"
                 for rule in excluded if any(fnmatch.fnmatchcase(cid, glob) for cid in rule.ids)][:2]
        fixed = _repaired(glob, ids)
        if fixed:
            hits = sum(fnmatch.fnmatchcase(cid, fixed) for cid in ids)
            hints.append(f"--only {fixed!r} would match {hits} case(s)")
        close = closest_ids(glob, ids)
        if close:
            hints.append("close case ids: " + ", ".join(close))
        if not hints:
            hints.append(f"case ids look like {ids[0]}" if ids else "the matrix has no case")
        out.append(f"no case of the matrix matches --only {glob!r} ({'; '.join(hints)}; tebench list shows "
                   "every id)")
    return out


def plan(cases: list[Case], env: Environment, rounds: int) -> list[Planned]:
    """Rounds interleaved (all cases of round 0, then round 1, ...), as asv does,
    so slow drift of the machine spreads over every mode instead of biasing one."""
    gates = {c.id: gate_case(c, env) for c in cases}
    return [Planned(c, r, gates[c.id]) for r in range(rounds) for c in cases]
