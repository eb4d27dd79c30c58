"""Join shard results into one run.

Shards of one matrix (``tebench run --shard I/N``) may run on different
machines or CI jobs, of one kind of device. ``merge`` refuses shards of different
matrices, commits, round counts or devices, refuses a shard given twice, and reports shards that are
missing. Loss parity is judged again over the merged records, because a
case's reference may have run in another shard; the merged file stores those
verdicts with the rules that judged them, so that reading it judges nothing
again. A merge of one file keeps the verdicts of this tebench's rules as they
are (``rejudge`` judges them all).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from tebench import bounded
from tebench.gc_control import collector_off
from tebench.analysis import judged_run
from tebench.store import reader as results
from tebench.store.atomic import same_file
from tebench.store.writer import case_line_with_run_ids, write_all
from tebench.plan.shards import MAX_SHARDS
from tebench.schema.part import PartBase
from tebench.schema.vocabulary import MAX_ROUNDS
from tebench.schema.records import CaseResult, Parity, RunHeader
from tebench.errors import TebenchError


LEFT_OUT = ("kernels", "fp8_state")
"""What a merge holds a record without while it checks and judges, where the record's line is vouched for (the
line keeps them: it is copied, or read again to be written anew): the profiled step's kernel rows and the FP8
scaling state, which no verdict reads, are three quarters of a nightly record."""


class MergeError(TebenchError, ValueError):
    """Shards that cannot be merged (exit status 2)."""


def _shard(header: RunHeader, path: str | Path) -> tuple[int, int]:
    """``(I, N)`` of ``--shard I/N``; (1, 1) for a whole run. MergeError unless 1 <= I <= N <= MAX_SHARDS:
    the missing shards are listed one by one, so N bounds what a merge allocates."""
    i, n = tuple(header.shard or (1, 1))
    if not 1 <= i <= n <= MAX_SHARDS:
        raise MergeError(f"{path}: header [shard] = {list(header.shard or [])}: must be [I, N] with "
                         f"1 <= I <= N <= {MAX_SHARDS}")
    return i, n


@dataclass
class MergedRecord:
    """One record of a merge and the line it was read from."""

    record: CaseResult
    line: bytes | None = None
    """The line the record was read from, where its reader vouched that the line is the record: copied with
    the new run ids where :attr:`copy`, read again where the record was held without :data:`LEFT_OUT`."""
    copy: bool = False
    """The merge changed only the record's run ids (its verdict stands): its line is copied with them
    (:func:`~tebench.store.writer.case_line_with_run_ids`) rather than the record written anew."""
    had_shard_run_id: bool = False
    """The line already held a ``shard_run_id`` (a shard of a merge merged again)."""

    def out(self) -> CaseResult | bytes:
        """What the merged file holds for this record: its line with the new run ids, else the record (read
        again from its line where it was held without :data:`LEFT_OUT`)."""
        rec = self.record
        if self.copy and self.line is not None and rec.run_id is not None:
            line = case_line_with_run_ids(self.line, rec.run_id, rec.shard_run_id, self.had_shard_run_id)
            if line is not None:
                return line
        return _read_again(rec, self.line) if self.line is not None and rec.left_out() else rec


@dataclass
class Merged:
    """Shards read, checked and joined, not yet written: the header, the records, the missing shards."""

    header: dict[str, Any]
    entries: list[MergedRecord]
    missing: list[str]
    missing_cases: list[str] = field(default_factory=list)
    """``case_id round R (shard I/N)``: a case a present shard was to run and that no shard recorded."""

    @property
    def records(self) -> list[CaseResult]:
        """The merged records, in the order they are written."""
        return [e.record for e in self.entries]

    def lines(self) -> Iterator[PartBase | dict[str, Any] | bytes]:
        """What :func:`~tebench.store.writer.write_all` writes: the header, then each record (:meth:`MergedRecord.out`)."""
        yield self.header
        for entry in self.entries:
            yield entry.out()


def _read_again(rec: CaseResult, line: bytes) -> CaseResult:
    """The whole record of a line a record held without :data:`LEFT_OUT` was read from, with what the merge set
    on it (run ids, verdict): what the record would have been, read whole."""
    full = results.parse_record(results.loads(line), text=False, line=line)
    assert isinstance(full, CaseResult)  # a vouched-for line is a case line that was read once already
    full.run_id, full.shard_run_id, full.parity = rec.run_id, rec.shard_run_id, rec.parity
    return full


def check_target(paths: list[str | Path], out: str | Path) -> dict[str, Any] | None:
    """MergeError if writing ``out/results.jsonl`` would replace a shard being merged or another run; returns the
    header of the earlier merge it would replace (None where there is none), for :func:`check_replaced`.

    A shard's own file holds what the merge leaves out (a failed first attempt, the
    resume header); another run's results are a night's work. A merge may replace
    an earlier merge of the same shards (a late shard merged again).
    """
    target = Path(out) / results.RESULTS_NAME
    for path in paths:
        if same_file(results.results_path(path), target):
            raise MergeError(f"--out {out}: {target} is the shard {path} itself; merging would replace it "
                             "(and drop what the merge leaves out of it): choose another --out")
    if not target.exists() or (target.is_file() and target.stat().st_size == 0):
        return None
    try:
        # Bounded, and only a regular file: a FIFO or a one-line multi-GB file there must not hang or fill memory.
        lines = bounded.iter_lines(target, line_limit=bounded.RESULTS_LINE_MAX_BYTES)
        first_line = next((line for _, line in lines), None)
        first = json.loads(first_line) if first_line else None
    except (OSError, ValueError):
        first = None
    if not (isinstance(first, dict) and "merged_from" in first):
        run_id = first.get("run_id") if isinstance(first, dict) else None
        raise MergeError(f"--out {out}: {target} already holds the results of "
                         f"{f'run {run_id}' if run_id else 'another run'}, not of a merge; merging would "
                         "replace them: choose another --out")
    return first


def check_replaced(out: str | Path, earlier: dict[str, Any] | None, shard_run_ids: list[str | None]) -> None:
    """MergeError if the earlier merge in ``out`` (:func:`check_target`) joined none of these shards: it is another
    night's or another matrix's merge, and writing this one would replace it without a word."""
    if earlier is None:
        return
    merged_from = earlier.get("merged_from")
    joined = {m.get("run_id") for m in merged_from if isinstance(m, dict)} if isinstance(merged_from, list) else set()
    if joined & {r for r in shard_run_ids if r is not None}:
        return
    shown = ", ".join(sorted(str(r) for r in joined)[:4]) or "none named"
    raise MergeError(f"--out {out}: {Path(out) / results.RESULTS_NAME} already holds merge {earlier.get('run_id')!r} "
                     f"of other shards (run ids {shown}); merging would replace it: choose another --out, or "
                     "remove it first")


def merge(paths: list[str | Path], out: str | Path, rejudge: bool = False) -> tuple[Path, list[str]]:
    """Merge shard results into ``out/results.jsonl``; returns the path and the missing shards.

    The caller holds ``out``'s lock if other commands may write it (``tebench merge`` does).
    """
    merged = join(paths, out, rejudge)
    return write(merged, out), merged.missing


def write(merged: Merged, out: str | Path) -> Path:
    """Write a joined run to ``out/results.jsonl`` atomically; returns its path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / results.RESULTS_NAME
    with collector_off():  # the records written anew make parts and dicts by the thousand; the held ones have no cycles
        write_all(path, merged.lines())
    return path


def _check_no_overlap(paths: list[str | Path], runs: list[Any]) -> None:
    """MergeError when two shards recorded the same case and round: the merged file would hold it twice,
    and the shard that should have run it ran something else (``--only`` or a matrix changed between them)."""
    seen: dict[tuple[str, int], str] = {}
    for path, run in zip(paths, runs):
        for rec in run.cases:  # the last record of each case and round of this shard
            key = (rec.case_id, rec.round_no)
            if key in seen:
                raise MergeError(f"{path}: case {key[0]} round {key[1]} is also in {seen[key]}: the shards overlap, "
                                 "so they are not the shards of one run; merge shards of one --shard I/N series")
            seen[key] = str(path)


def _missing_cases(runs: list[Any]) -> list[str]:
    """Every case a shard's header lists (for each of its rounds) that no shard recorded."""
    recorded = {(rec.case_id, rec.round_no) for run in runs for rec in run.cases}
    missing = []
    for run in runs:
        shard = "/".join(map(str, run.header.shard or (1, 1)))
        for case_id in run.header.case_ids or []:
            for r in range(min(run.header.rounds or 1, MAX_ROUNDS)):
                if (case_id, r) not in recorded:
                    missing.append(f"{case_id} round {r} (shard {shard})")
    return missing


def _verdict_stands(judged: Parity | None, stored: Parity | None, line: bytes) -> bool:
    """Whether a record's verdict after the merge's judging writes what its line holds: the same verdict object,
    or one judged again whose JSON, in the stored verdict's key order (as a record written anew puts it), is the
    stored one's, key order, number types and signs included."""
    if judged is stored:
        return True
    if judged is None or stored is None:
        return False
    read = results.loads(line).get("parity")
    return isinstance(read, dict) and json.dumps(judged.to_dict(read)) == json.dumps(read)


def join(paths: list[str | Path], out: str | Path, rejudge: bool = False) -> Merged:
    """Read and check the shards and join them into one run to be written to ``out``; parity judged over
    them all (with one file: where not of this tebench's rules, unless ``rejudge``)."""
    # The shards' records stay to the end and hold no cycles: a collection would only walk them.
    with collector_off():
        return _join(paths, out, rejudge)


def _join(paths: list[str | Path], out: str | Path, rejudge: bool) -> Merged:
    if not paths:
        raise MergeError("nothing to merge")
    earlier = check_target(paths, out)
    # Parity is judged below, over all shards together.
    runs = [judged_run.read(p, judge=False, without=LEFT_OUT) for p in paths]
    for path, run in zip(paths, runs):
        if len(run.run_ids) > 1:  # its first header would speak for all: a second shard's records, unnamed
            raise MergeError(f"{path}: holds {len(run.run_ids)} runs ({', '.join(map(str, run.run_ids))}), "
                             "appended to one file; a merge takes one run per file: give each shard's own file")
    check_replaced(out, earlier, [r.run_id for r in runs])
    ref = runs[0].header
    for path, run in zip(paths, runs):
        head = run.header
        checks = [
            ("matrix", head.matrix.sha256 if head.matrix else None, ref.matrix.sha256 if ref.matrix else None),
            ("tebench commit", head.environment.git_commit, ref.environment.git_commit),
            ("rounds", head.rounds, ref.rounds),
            ("shard count", _shard(head, path)[1], _shard(ref, paths[0])[1]),
        ]
        for what, mine, theirs in checks:
            if mine != theirs:
                raise MergeError(f"{path}: {what} differs from {paths[0]} ({mine!r} vs {theirs!r}); "
                                 "only shards of one matrix, commit and round count can be merged")
        # Shards may run on several machines, of one kind: a case judged and timed against a reference that ran
        # on another kind of device would compare the devices, under the first shard's name.
        if head.device != ref.device:
            raise MergeError(f"{path}: ran on {head.device!r}, {paths[0]} on {ref.device!r}; a merged run is one kind "
                             "of device (its speedups and verdicts compare cases with the references of other "
                             "shards): merge the shards of each device apart, and set the runs side by side with "
                             "tebench report or tebench compare")
    shards = [_shard(r.header, p) for p, r in zip(paths, runs)]
    seen: dict[int, str] = {}
    for path, (i, _) in zip(paths, shards):
        if i in seen:
            if shards[0][1] == 1:
                raise MergeError(f"{path}: a whole run, as is {seen[i]}: merge joins the shards of one run "
                                 "(--shard I/N); to set two runs side by side, give both to tebench report, or "
                                 "compare them with tebench compare")
            raise MergeError(f"{path}: shard {i} given twice (also {seen[i]})")
        seen[i] = str(path)
    n = shards[0][1]
    missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in seen]

    _check_no_overlap(paths, runs)
    missing_cases = _missing_cases(runs)
    records = [rec for run in runs for rec in run.cases]
    verdicts = [rec.parity for rec in records]
    # The lines before the judging: a verdict assigned withdraws a record's line.
    entries = [MergedRecord(rec, line if isinstance(line := rec.stored_line(), bytes) else None,
                            had_shard_run_id="shard_run_id" in rec.model_fields_set) for rec in records]
    # A shard may have judged against a fallback reference (PT-AMP) because
    # PT-FP32 ran in another shard: judge again over all shards. One file's verdicts
    # of these rules were judged over these same records.
    judged_run.judge_parity(records, rejudge or len(runs) > 1, str(paths[0]) if len(paths) == 1 else "merge",
                            "--rejudge" if rejudge else "a merge of shards judges each against all of them")
    # A record whose verdict stands, judged again or not, changes only in its run ids: its line is copied with
    # them. A new verdict is written anew (in the stored verdict's key order).
    for entry, verdict in zip(entries, verdicts):
        entry.copy = entry.line is not None and _verdict_stands(entry.record.parity, verdict, entry.line)
    run_id = "merged-" + time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    header = {
        **{k: v for k, v in ref.to_dict().items() if k not in ("schema", "schema_version")},
        "run_id": run_id,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "resumed": False,
        "shard": None,
        "case_ids": list(dict.fromkeys(c for r in runs for c in r.header.case_ids or [])),
        "merged_from": [{"path": str(p), "run_id": r.run_id, "shard": r.header.shard,
                         "device": gpu.name if (gpu := r.header.environment.gpu) is not None else None,
                         "host": r.header.env.hostname if r.header.env is not None else None}
                        for p, r in zip(paths, runs)],
        "missing_shards": missing,
        "missing_cases": missing_cases,
    }
    for rec in records:
        rec.shard_run_id = rec.run_id
        rec.run_id = run_id
    return Merged(header, entries, missing, missing_cases)
