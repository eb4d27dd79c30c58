"""A finished run's verdicts are judged over the whole run and written back with their rules: only those
lines change, and reading the file afterwards judges nothing again."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path


from conftest import FIXTURES
from tebench.analysis import judged_run, parity
from tebench.run import final_verdicts
from tebench.store import reader as results
from tebench.store.writer import write_all

CROSSOVER = FIXTURES / "h200-crossover.jsonl"
"""An H200 run stored before the rules were recorded: its verdicts name no rules."""

GARBAGE = b'{"schema": "tebench.results", "cut short by a kil\n'


def _run_file(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """The crossover run as this tebench writes it (its verdicts without rules, as a running run's are) with,
    after its records, an unreadable line and a re-run of its first case's round (a resumed run records a
    case again): the re-run is the one that counts."""
    stored = judged_run.read(CROSSOVER, judge=False)
    write_all(tmp_path / "written.jsonl", [stored.header, *stored.cases])
    lines = (tmp_path / "written.jsonl").read_bytes().splitlines(keepends=True)
    first = next(line for line in lines if json.loads(line).get("type") == "case" and json.loads(line).get("parity"))
    lines += [GARBAGE, first]
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join(lines))
    return path, lines


def _read(path: Path) -> results.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unreadable line
        return judged_run.read(path)


def test_every_last_record_is_stored_with_the_whole_runs_verdict_and_its_rules(tmp_path):
    path, _ = _run_file(tmp_path)
    expected = {(c.case_id, c.round_no): c.parity.to_dict() for c in _read(path).cases if c.parity is not None}
    assert final_verdicts.write(path) == len(expected) > 10
    stored = {(c.case_id, c.round_no): c.parity for c in _read(path).cases if c.parity is not None}
    assert {k: v.to_dict() for k, v in stored.items()} == expected
    assert {v.rules for v in stored.values()} == {parity.PARITY_RULES}


def test_only_the_judged_lines_change(tmp_path):
    path, before = _run_file(tmp_path)
    final_verdicts.write(path)
    after = path.read_bytes().splitlines(keepends=True)
    assert len(after) == len(before)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert GARBAGE in after and after[0] == before[0]  # the unreadable line and the header, byte for byte
    first_case = next(i for i, line in enumerate(before) if i > 0 and json.loads(line).get("parity"))
    assert first_case not in changed, "a record that a later line replaces is kept as it was"
    for i in changed:
        old, new = json.loads(before[i]), json.loads(after[i])
        assert new["parity"]["rules"] == parity.PARITY_RULES and "rules" not in old["parity"]
        new.pop("parity"), old.pop("parity")
        assert new == old and list(new) == list(old)  # nothing else in the line moved


def test_reading_a_finished_runs_file_judges_nothing(tmp_path, monkeypatch):
    path, _ = _run_file(tmp_path)
    final_verdicts.write(path)

    def judge(*args, **kwargs):
        raise AssertionError("judged again")

    monkeypatch.setattr(parity, "judge", judge)
    assert _read(path).cases
    assert final_verdicts.write(path) == 0  # a second write finds nothing to judge, and leaves the file


def test_a_file_it_cannot_rewrite_exactly_stays_as_it_was(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(gzip.compress(CROSSOVER.read_bytes()))  # a plain run never writes this; a user might
    before = path.read_bytes()
    assert final_verdicts.write(path) == 0
    assert path.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp"))



def test_a_line_too_long_to_copy_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    from tebench import bounded

    path, lines = _run_file(tmp_path)
    longest = max(len(line) for line in lines)
    with path.open("ab") as fh:  # one line longer than the line limit below, every record shorter
        fh.write(b'{"x": "' + b"y" * longest + b'"}\n')
    before = path.read_bytes()
    real = bounded.iter_lines
    monkeypatch.setattr(bounded, "iter_lines", lambda p, *a, **k: real(p, line_limit=longest + 1))
    assert final_verdicts.write(path) == 0
    assert path.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp"))
