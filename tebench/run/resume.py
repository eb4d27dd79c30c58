"""``--resume``: what a killed run already recorded, checked against the run being continued."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from tebench.store import reader as results
from tebench.errors import RunError
from tebench.plan.matrix import Matrix
from tebench.run.options import RunOptions
from tebench.schema.records import CaseResult


def resume_state(path: Path, matrix: Matrix, opts: RunOptions,
                 case_ids: Sequence[str] = ()) -> tuple[str, set[tuple[str, int]], list[CaseResult]]:
    """The run id, the (case id, round) already recorded and their records, of the run ``--resume`` continues.

    ``case_ids``: the cases this invocation selects (its ``--only``); a warning says where they are not the
    cases the run was started with, so that a resume with a narrower ``--only`` does not leave the others
    without a result unsaid."""
    run = results.read(path)
    head = run.header
    matrix_info = head.matrix
    if (matrix_info.sha256 if matrix_info else None) != matrix.sha256:
        started = matrix_info.source if matrix_info else None
        changed = _changed_keys(matrix_info.data if matrix_info else None, matrix.data)
        if started == matrix.source:
            # The file that holds a changed value: the matrix itself or a file of its extends chain.
            edited = list(dict.fromkeys(matrix.origin(key) for key in changed)) or [matrix.source]
            what = f"{' and '.join(edited)} {'was' if len(edited) == 1 else 'were'} edited since the run started"
        else:
            what = f"the run was started with {started}"
        raise RunError(f"{path}: --resume with a different matrix: {what}"
                       + (f" (its values differ at {', '.join(changed)}"
                          + (", and more" if len(changed) == _SHOWN else "") + ")" if changed else "")
                       + "; use a new --out directory, or undo the change")
    if head.rounds != opts.rounds:
        raise RunError(f"{path}: the run was started with --rounds {head.rounds}, not {opts.rounds}")
    if (head.shard or None) != (list(opts.shard) if opts.shard else None):
        def shown(shard: object) -> str:
            return f"--shard {shard[0]}/{shard[1]}" if isinstance(shard, (list, tuple)) else "no --shard"

        raise RunError(f"{path}: the run was started with {shown(head.shard)}, not {shown(opts.shard)}")
    latest = run.latest()
    planned = head.case_ids or []
    if case_ids and planned:
        chosen, recorded, in_run = set(case_ids), {case_id for case_id, _ in latest}, set(planned)
        left = [c for c in planned if c not in chosen and c not in recorded]
        added = [c for c in case_ids if c not in in_run]
        if left:
            warnings.warn(f"{path}: --resume: {len(left)} case(s) the run was started with and has not recorded are "
                          f"not selected now (first: {left[0]}) and stay without a result; resume with the run's "
                          "own --only (or none) to run them", stacklevel=2)
        if added:
            warnings.warn(f"{path}: --resume: {len(added)} selected case(s) are not of the run being continued "
                          f"(first: {added[0]}); they run under its run id too", stacklevel=2)
    return run.run_id, set(latest), list(latest.values())


_SHOWN = 3
"""The most differing keys a refusal names."""


def _changed_keys(before: object, after: object, prefix: str = "", limit: int = _SHOWN) -> list[str]:
    """Up to ``limit`` dotted key paths at which two resolved matrices differ (``settings.steps``), in file order:
    where their JSON differs, as the matrix hash sees it (``120`` and ``120.0`` differ)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in [*before, *(k for k in after if k not in before)]:
            out += _changed_keys(before.get(key), after.get(key), f"{prefix}{key}.", limit - len(out))
            if len(out) >= limit:
                break
        return out[:limit]
    differ = json.dumps(before, sort_keys=True, default=str) != json.dumps(after, sort_keys=True, default=str)
    return [prefix.rstrip(".") or "(the whole file)"] if differ and limit > 0 else []
