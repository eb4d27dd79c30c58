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
        raise RunError(f"{path}: --resume with a different matrix than the run was started with "
                       f"({matrix_info.source if matrix_info else None}); use a new --out directory")
    if head.rounds != opts.rounds:
        raise RunError(f"{path}: the run was started with --rounds {head.rounds}, not {opts.rounds}")
    if (head.shard or None) != (list(opts.shard) if opts.shard else None):
        raise RunError(f"{path}: the run was started with --shard {head.shard}, not {opts.shard}")
    latest = run.latest()
    return run.run_id, set(latest), list(latest.values())
