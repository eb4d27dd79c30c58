"""``--resume``: what a killed run already recorded, checked against the run being continued."""

from __future__ import annotations

from pathlib import Path
from tebench.store import reader as results
from tebench.errors import RunError, StorageError  # noqa: F401  (raised here, caught by the CLI)
from tebench.plan.matrix import Matrix
from tebench.run.options import RunOptions
from tebench.schema.records import CaseResult


def resume_state(path: Path, matrix: Matrix, opts: RunOptions) -> tuple[str, set[tuple[str, int]], list[CaseResult]]:
    """The run id of the run at ``path``, the (case id, round) pairs it recorded and their records
    (the last of each), after checking that it ran ``matrix`` with ``opts``' rounds and shard."""
    run = results.read(path)
    head = run.header
    if head.get("matrix", {}).get("sha256") != matrix.sha256:
        raise RunError(f"{path}: --resume with a different matrix than the run was started with "
                       f"({head.get('matrix', {}).get('source')}); use a new --out directory")
    if head.get("rounds") != opts.rounds:
        raise RunError(f"{path}: the run was started with --rounds {head.get('rounds')}, not {opts.rounds}")
    if (head.get("shard") or None) != (list(opts.shard) if opts.shard else None):
        raise RunError(f"{path}: the run was started with --shard {head.get('shard')}, not {opts.shard}")
    done = set(run.latest())
    return run.run_id, done, [CaseResult.from_dict(d, f"{path}: case {d.get('case_id')!r}")
                              for d in run.latest().values()]
