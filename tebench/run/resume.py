"""``--resume``: what a killed run already recorded, checked against the run being continued."""

from __future__ import annotations

from pathlib import Path
from tebench.store import reader as results
from tebench.errors import RunError
from tebench.plan.matrix import Matrix
from tebench.run.options import RunOptions
from tebench.schema.records import CaseResult


def resume_state(path: Path, matrix: Matrix, opts: RunOptions) -> tuple[str, set[tuple[str, int]], list[CaseResult]]:
    """The run id, the (case id, round) already recorded and their records, of the run ``--resume`` continues."""
    run = results.read(path)
    head = run.header
    matrix_info = head.matrix
    if (matrix_info.sha256 if matrix_info else None) != matrix.sha256:
        started = matrix_info.source if matrix_info else None
        changed = _changed_keys(matrix_info.data if matrix_info else None, matrix.data)
        what = (f"{matrix.source} was edited since the run started" if started == matrix.source
                else f"the run was started with {started}")
        raise RunError(f"{path}: --resume with a different matrix: {what}"
                       + (f" (its values differ at {', '.join(changed)})" if changed else "")
                       + "; use a new --out directory, or undo the change")
    if head.rounds != opts.rounds:
        raise RunError(f"{path}: the run was started with --rounds {head.rounds}, not {opts.rounds}")
    if (head.shard or None) != (list(opts.shard) if opts.shard else None):
        raise RunError(f"{path}: the run was started with --shard {head.shard}, not {opts.shard}")
    latest = run.latest()
    return run.run_id, set(latest), list(latest.values())


def _changed_keys(before: object, after: object, prefix: str = "", limit: int = 3) -> list[str]:
    """Up to ``limit`` dotted key paths at which two resolved matrices differ (``settings.steps``), in file order."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in [*before, *(k for k in after if k not in before)]:
            out += _changed_keys(before.get(key), after.get(key), f"{prefix}{key}.", limit - len(out))
            if len(out) >= limit:
                break
        return out[:limit]
    return [prefix.rstrip(".") or "(the whole file)"] if before != after and limit > 0 else []
