"""Join shard results into one run.

Shards of one matrix (``tebench run --shard I/N``) may run on different
machines or CI jobs. ``merge`` refuses shards of different matrices, commits
or round counts, refuses a shard given twice, and reports shards that are
missing. Loss parity is judged again over the merged records, because a
case's reference may have run in another shard.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from tebench.schema import records as record
from tebench.store import reader as results
from tebench.store.writer import write_all
from tebench.plan.shards import MAX_SHARDS
from tebench.schema.records import RunHeader


class MergeError(ValueError):
    """Shards that cannot be merged (exit status 2)."""


def _shard(header: RunHeader, path: str | Path) -> tuple[int, int]:
    """``(I, N)`` of ``--shard I/N``; (1, 1) for a whole run. MergeError unless 1 <= I <= N <= MAX_SHARDS:
    the missing shards are listed one by one, so N bounds what a merge allocates."""
    i, n = tuple(header.shard or (1, 1))
    if not 1 <= i <= n <= MAX_SHARDS:
        raise MergeError(f"{path}: header [shard] = {list(header.shard or [])}: must be [I, N] with "
                         f"1 <= I <= N <= {MAX_SHARDS}")
    return i, n


def merge(paths: list[str | Path], out: str | Path) -> tuple[Path, list[str]]:
    """Merge shard results into ``out/results.jsonl``; returns the path and the missing shards."""
    if not paths:
        raise MergeError("nothing to merge")
    # Parity is judged below, over all shards together.
    runs = [record.read(p, judge=False) for p in paths]
    ref = runs[0].header
    for path, run in zip(paths, runs):
        head = run.header
        checks = [
            ("matrix", (head.matrix or {}).get("sha256"), (ref.matrix or {}).get("sha256")),
            ("tebench commit", head.environment.get("git_commit"), ref.environment.get("git_commit")),
            ("rounds", head.rounds, ref.rounds),
            ("shard count", _shard(head, path)[1], _shard(ref, paths[0])[1]),
        ]
        for what, mine, theirs in checks:
            if mine != theirs:
                raise MergeError(f"{path}: {what} differs from {paths[0]} ({mine!r} vs {theirs!r}); "
                                 "only shards of one matrix, commit and round count can be merged")
    shards = [_shard(r.header, p) for p, r in zip(paths, runs)]
    seen: dict[int, str] = {}
    for path, (i, _) in zip(paths, shards):
        if i in seen:
            raise MergeError(f"{path}: shard {i} given twice (also {seen[i]})")
        seen[i] = str(path)
    n = shards[0][1]
    missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in seen]

    records = [rec for run in runs for rec in run.cases]
    # A shard may have judged against a fallback reference (PT-AMP) because
    # PT-FP32 ran in another shard: judge again over all shards.
    record.judge_parity(records)
    run_id = "merged-" + time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    header = {
        **{k: v for k, v in ref.to_dict().items() if k not in ("schema", "schema_version")},
        "run_id": run_id,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "resumed": False,
        "shard": None,
        "case_ids": list(dict.fromkeys(c for r in runs for c in r.header.case_ids or [])),
        "merged_from": [{"path": str(p), "run_id": r.run_id, "shard": r.header.shard,
                         "device": (r.header.environment.get("gpus") or [{}])[0].get("name"),
                         "host": r.header.environment.get("hostname")}
                        for p, r in zip(paths, runs)],
        "missing_shards": missing,
    }
    for rec in records:
        rec.shard_run_id = rec.run_id
        rec.run_id = run_id
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / results.RESULTS_NAME
    write_all(path, [header, *(rec.to_dict() for rec in records)])
    return path, missing
