"""A merge copies each record's line with its new run ids where the record changed in nothing else; for lines
tebench wrote, the file it writes is the one writing every record anew gives, byte for byte (but the merge's
run id and time), and the history stores a record's line as read, the JSON writing it anew gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, read_jsonl, write_jsonl
from tebench.run import merge
from tebench.schema.part import PartBase
from tebench.store import reader
from tebench.store.writer import CASE_LINE_START, case_line_with_run_ids

CPU = FIXTURES / "cpu-smoke.jsonl"
NIGHT = ROOT / "reports" / "h200-nightly-twice" / "night1.jsonl.gz"
"""A merged nightly: verdicts of this tebench's rules, every record with a shard run id as its last key."""


def _merged_text(paths: list[Path], out: Path, rejudge: bool = False) -> tuple[list[str], merge.Merged]:
    joined = merge.join([str(p) for p in paths], out, rejudge)
    merge.write(joined, out)
    text = (out / "results.jsonl").read_text()
    # The merge's own run id and time differ from one merge to the next.
    text = text.replace(joined.header["run_id"], "RUN").replace(joined.header["created"], "TIME")
    return text.splitlines(), joined


def _copied(joined: merge.Merged) -> int:
    return sum(e.copy for e in joined.entries)


def _both(paths: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rejudge: bool = False
          ) -> tuple[list[str], list[str], int]:
    """The merged lines with lines copied, the same written anew (no line vouched for), and how many were copied."""
    copied, joined = _merged_text(paths, tmp_path / "copied", rejudge)
    with monkeypatch.context() as m:
        m.setattr(PartBase, "vouch_line", lambda self: None)
        anew, again = _merged_text(paths, tmp_path / "anew", rejudge)
    assert _copied(again) == 0
    return copied, anew, _copied(joined)


def test_a_merged_nightly_merged_again_copies_every_line_and_writes_what_writing_anew_writes(tmp_path, monkeypatch):
    copied, anew, n = _both([NIGHT], tmp_path, monkeypatch)
    assert n == len(copied) - 1 > 50
    assert copied == anew
    # The shard run id, the line's last key, is the merged run's, and the run id the new merge's.
    last = json.loads(copied[-1])
    assert last["run_id"] == "RUN" and last["shard_run_id"] != "RUN" and list(last)[-1] == "shard_run_id"


def test_judged_again_a_verdict_that_stands_is_copied_and_one_that_changed_is_written_anew(tmp_path, monkeypatch):
    copied, anew, n = _both([NIGHT], tmp_path, monkeypatch, rejudge=True)
    assert copied == anew and n > 50
    # A verdict that stands but was stored in another key order (at any depth) is written anew, in the order a
    # verdict written anew has.
    records = read_jsonl(NIGHT)
    amp = next(r for r in records if r.get("case_id") == "gpt/tutorial/PT-AMP")
    amp["parity"]["validation"] = dict(reversed(list(amp["parity"]["validation"].items())))
    path = write_jsonl(tmp_path / "reordered.jsonl", records)
    copied, anew, n2 = _both([path], tmp_path / "reordered", monkeypatch, rejudge=True)
    assert copied == anew and n2 == n - 1


def test_shards_of_a_run_judged_together_write_what_writing_anew_writes(tmp_path, monkeypatch):
    records = read_jsonl(NIGHT)
    head, cases = records[0], records[1:]
    paths = []
    for i, part in enumerate((cases[::2], cases[1::2]), 1):
        shard = {**head, "run_id": f"s{i}", "shard": [i, 2], "case_ids": [c["case_id"] for c in part]}
        part = [{k: v for k, v in c.items() if k != "shard_run_id"} if i == 1 else c for c in part]
        paths.append(write_jsonl(tmp_path / f"s{i}.jsonl", [shard, *({**c, "run_id": f"s{i}"} for c in part)]))
    copied, anew, n = _both(paths, tmp_path, monkeypatch)
    assert copied == anew
    # Judged again over both shards, the verdicts stand: every line is copied, with a shard run id added
    # (shard 1) or replaced (shard 2).
    assert n == len(cases)
    assert {json.loads(line).get("shard_run_id") for line in copied[1:]} == {"s1", "s2"}


def test_lines_not_as_the_writer_writes_them_are_written_anew(tmp_path, monkeypatch):
    records = read_jsonl(NIGHT)
    compact = tmp_path / "compact.jsonl"
    compact.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    nan = [records[0], *({**r, "reason": "loss went NaN at step 3"} for r in records[1:])]
    for path in (compact, write_jsonl(tmp_path / "nan.jsonl", nan)):
        copied, anew, n = _both([path], tmp_path / path.stem, monkeypatch)
        assert n == 0 and copied == anew


def test_a_record_the_reader_completed_or_changed_is_not_vouched_for(tmp_path):
    records = read_jsonl(NIGHT)
    changed = [records[0]]
    for i, r in enumerate(records[1:]):
        r = json.loads(json.dumps(r))
        if i == 0:
            del r["case"]["settings"]["steps"]  # completed with its default on reading
        elif i == 1:
            r["timing"] = None  # a stored null part reads as absent
        elif i == 2:
            r["reason"] = "\ud83d\ude00"  # an escaped surrogate pair: the text is walked
        changed.append(r)
    run = reader.read(write_jsonl(tmp_path / "changed.jsonl", changed))
    assert [r.stored_line() is None for r in run.cases[:4]] == [True, True, True, False]
    assert not any(r.stored_line() for r in reader.read(CPU).cases)  # older settings, completed on reading


def _history_cases(db: Path, files: list[Path]) -> list[tuple]:
    import sqlite3
    from contextlib import closing

    from tebench.analysis import judged_run
    from tebench.store import history

    for f in files:
        for run in judged_run.runs_in(f):
            history.add(db, run)
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT * FROM cases ORDER BY case_id, round").fetchall()


def test_history_stores_the_line_as_read_which_is_what_writing_anew_gives(tmp_path, monkeypatch):
    stored = _history_cases(tmp_path / "copied.db", [NIGHT])
    assert reader.read(NIGHT).cases[0].stored_line() is not None
    with monkeypatch.context() as m:
        m.setattr(PartBase, "vouch_line", lambda self: None)
        anew = _history_cases(tmp_path / "anew.db", [NIGHT])
    assert stored == anew and len(stored) > 50


def test_an_assignment_withdraws_the_line():
    rec = reader.read(NIGHT).cases[0]
    assert rec.stored_line() is not None
    rec.run_id = "other"
    assert rec.stored_line() is None


def test_case_line_with_run_ids():
    line = CASE_LINE_START + b'"a", "case_id": "x", "reason": "\\"shard_run_id\\": \\"q\\"}"}\n'
    assert case_line_with_run_ids(line, "b", None, False) == CASE_LINE_START + b'"b"' + line[len(CASE_LINE_START) + 3:]
    assert case_line_with_run_ids(line, "b", "a", False).endswith(b'}", "shard_run_id": "a"}\n')
    # A shard run id the line holds, but not as its last key: written anew.
    assert case_line_with_run_ids(line, "b", "a", True) is None
    held = CASE_LINE_START + b'"a", "case_id": "x", "shard_run_id": null}\n'
    assert case_line_with_run_ids(held, "b", None, True) == CASE_LINE_START + b'"b", "case_id": "x", "shard_run_id": null}\n'
    assert case_line_with_run_ids(held, "b", "c\u00e9", True).endswith(b'"shard_run_id": "c\\u00e9"}\n')
    assert case_line_with_run_ids(b'{"schema": "tebench.results"}\n', "b", None, False) is None
    # A key given twice reads as its last value: such a line is written anew.
    twice = CASE_LINE_START + b'"a", "case_id": "x", "run_id": "a2"}\n'
    assert case_line_with_run_ids(twice, "b", None, False) is None
    twice = CASE_LINE_START + b'"a", "shard_run_id": "s0", "case_id": "x", "shard_run_id": "s1"}\n'
    assert case_line_with_run_ids(twice, "b", "a", True) is None


def test_a_record_held_without_parts_is_copied_or_read_again_never_written_without_them():
    rec = reader.read(NIGHT, without=merge.LEFT_OUT).cases[0]
    assert rec.left_out() == merge.LEFT_OUT and rec.kernels is None and rec.stored_line() is not None
    with pytest.raises(ValueError, match="read its line again"):
        rec.to_dict()
    whole = reader.read(NIGHT).cases[0]
    assert whole.kernels is not None and whole.left_out() == ()


def test_judging_without_the_parts_a_merge_leaves_out_gives_every_stored_verdict_the_same():
    """Every results file under reports/ and tests/fixtures/, judged again whole and as a merge holds it."""
    import warnings

    from tebench.analysis import judged_run
    from tebench.schema.version import SchemaError

    files = sorted({*ROOT.glob("reports/**/*.jsonl*"), *FIXTURES.glob("*.jsonl")})
    light = judged = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in files:
            try:
                whole = judged_run.read(path, rejudge=True)
            except SchemaError:
                continue  # not a results file (a probe's own log)
            held = judged_run.read(path, rejudge=True, without=merge.LEFT_OUT)
            light += sum(1 for r in held.cases if r.left_out())
            judged += sum(1 for r in whole.cases if r.parity is not None)
            assert [r.parity.model_dump() if r.parity else None for r in held.cases] == \
                [r.parity.model_dump() if r.parity else None for r in whole.cases], path
    assert light > 100 and judged > 1000
