"""Results valid line by line but wrong as a whole: runs concatenated into one file, a run without a
run id, overlapping shards and shard cases that no file holds. Never silently merged or replaced."""

from __future__ import annotations

import json
import warnings

import pytest

from conftest import FIXTURES, read_jsonl, unsaid, write_jsonl
from tebench import cli
from tebench.run import merge
from tebench.analysis import judged_run
from tebench.store import history, reader

CPU = FIXTURES / "cpu-smoke.jsonl"


def _as_run(records: list[dict], run_id: str, status: str | None = None) -> list[dict]:
    out = []
    for r in records:
        r = {**r, "run_id": run_id}
        if status and r["type"] == "case" and r["status"] == "ok":
            r = {**r, "status": status, "reason": "crashed"}
        out.append(r)
    return out


def test_two_runs_concatenated_warn_that_one_replaces_the_other(tmp_path):
    both = _as_run(read_jsonl(CPU), "run-A") + _as_run(read_jsonl(CPU), "run-B", status="failed")
    path = str(write_jsonl(tmp_path / "both.jsonl", both))
    with pytest.warns(UserWarning, match=r"holds 2 runs; 11 case record\(s\) of one run replaced.*run-B replaces run "
                                         r"run-A's record"):
        run = reader.read(path)
    assert run.run_ids == ["run-A", "run-B"] and len(run.replaced) == 11


def test_history_stores_a_file_of_two_runs_as_two_runs_each_with_its_own_records(tmp_path, capsys):
    """Runs appended to one file are stored apart: neither's records stand in for the other's."""
    both = _as_run(read_jsonl(CPU), "run-A") + _as_run(read_jsonl(CPU), "run-B", status="failed")
    path = str(write_jsonl(tmp_path / "both.jsonl", both))
    db = tmp_path / "h.db"
    assert cli.main(["history", "add", path, "--db", str(db)]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "run run-A added" in out and "run run-B added" in out
    stored = history.frame(db)
    statuses = stored.groupby("run_id")["status"].agg(set)
    assert "ok" in statuses["run-A"] and "failed" not in statuses["run-A"]
    assert "failed" in statuses["run-B"] and "ok" not in statuses["run-B"]
    with pytest.raises(history.HistoryError, match="holds 2 runs"):  # the store itself still takes one run
        history.add(db, judged_run.read(path))


def test_a_record_without_a_run_id_is_the_run_above_it_and_one_of_no_run_is_named(tmp_path, capsys):
    """A line without a run id in run B's part of the file is B's (it once replaced A's own record and was stored
    in both runs); a line whose run id names no header is left out of both, and said so (it was dropped)."""
    a, b = _as_run(read_jsonl(CPU), "run-A"), _as_run(read_jsonl(CPU), "run-B", status="failed")
    del b[2]["run_id"]
    b[3]["run_id"] = "run-C"
    path = str(write_jsonl(tmp_path / "both.jsonl", a + b))
    db = tmp_path / "h.db"
    assert cli.main(["history", "add", path, "--db", str(db)]) == 0
    err = capsys.readouterr().err
    assert f"line {len(a) + 4}, {b[3]['case_id']} of run run-C" in err and "left out of every run" in err
    stored = history.frame(db).set_index(["run_id", "case_id"])["status"]
    assert stored[("run-A", b[2]["case_id"])] == "ok" and stored[("run-B", b[2]["case_id"])] == "failed"
    assert ("run-B", b[3]["case_id"]) not in stored.index and stored[("run-A", b[3]["case_id"])] == "ok"


def test_records_of_one_case_and_run_with_other_settings_are_named(tmp_path):
    records = read_jsonl(CPU)
    again = {**records[1], "round": 1, "case": {**records[1]["case"],
                                                "settings": {**records[1]["case"]["settings"], "steps": 2000}}}
    path = str(write_jsonl(tmp_path / "mixed.jsonl", [*records, again]))
    with pytest.warns(UserWarning, match="1 case record.s. ran other settings") as caught:
        run = reader.read(path)
    assert f"{path}:{len(records) + 1}: case {records[1]['case_id']} round 1 ran other settings than its record at " \
           f"{path}:2" in str(caught[0].message)
    assert len(run.mixed) == 1 and reader.read(CPU).mixed == []


def test_a_null_round_is_skipped_not_read_as_round_0(tmp_path):
    records = read_jsonl(CPU)
    again = {**records[1], "round": None, "status": "failed"}
    path = str(write_jsonl(tmp_path / "null.jsonl", [*records, again]))
    with pytest.warns(UserWarning, match=f"null.jsonl:{len(records) + 1}: .round. = None: must be an integer"):
        run = reader.read(path)
    assert run.latest()[(records[1]["case_id"], 0)].status == "ok"


def test_history_refuses_a_run_without_a_run_id(tmp_path, capsys):
    records = read_jsonl(CPU)
    del records[0]["run_id"]
    path = str(write_jsonl(tmp_path / "noid.jsonl", records))
    assert cli.main(["history", "add", path, "--db", str(tmp_path / "h.db")]) == 2
    err = capsys.readouterr().err
    assert unsaid(err, "header", "run id") == [], err


def test_appended_runs_of_different_cases_read_without_a_replacement_note(tmp_path, recwarn):
    records = read_jsonl(CPU)
    first = _as_run([records[0], *records[1:6]], "run-A")
    second = _as_run([records[0], *records[6:]], "run-B")
    run = reader.read(str(write_jsonl(tmp_path / "parts.jsonl", first + second)))
    assert run.replaced == [] and len(run.cases) == 11 and not recwarn.list


def _shard_records(records: list[dict], i: int, n: int, run_id: str, cases: list[dict]) -> list[dict]:
    header = {**records[0], "run_id": run_id, "shard": [i, n], "case_ids": [c["case_id"] for c in cases]}
    return [header, *({**c, "run_id": run_id} for c in cases)]


def test_overlapping_shards_are_refused(tmp_path, capsys):
    records = read_jsonl(CPU)
    one = str(write_jsonl(tmp_path / "s1.jsonl", _shard_records(records, 1, 2, "s1", records[1:7])))
    two = str(write_jsonl(tmp_path / "s2.jsonl", _shard_records(records, 2, 2, "s2", records[6:])))  # records[6] in both
    assert cli.main(["merge", one, two, "--out", str(tmp_path / "m"), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "is also in" in err and "overlap" in err and records[6]["case_id"] in err
    assert not (tmp_path / "m" / "results.jsonl").exists()


def test_merge_refuses_a_file_that_holds_two_shards_appended(tmp_path, capsys):
    """Its first header spoke for both: shard 2's records were written while the merge said shard 2 was missing."""
    records = read_jsonl(CPU)
    both = _shard_records(records, 1, 2, "s1", records[1:6]) + _shard_records(records, 2, 2, "s2", records[6:])
    path = str(write_jsonl(tmp_path / "s12.jsonl", both))
    out = tmp_path / "m"
    assert cli.main(["merge", path, "--out", str(out), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert unsaid(err, path, "holds 2 runs (s1, s2)", "one run per file") == [], err
    assert not (out / "results.jsonl").exists()


def test_merge_names_every_case_that_is_in_no_shard(tmp_path, capsys):
    records = read_jsonl(CPU)
    one = _shard_records(records, 1, 2, "s1", records[1:6])
    two = _shard_records(records, 2, 2, "s2", records[6:])
    two = two[:-1]  # shard 2 lists its last case but stopped before recording it
    paths = [str(write_jsonl(tmp_path / "s1.jsonl", one)), str(write_jsonl(tmp_path / "s2.jsonl", two))]
    assert cli.main(["merge", *paths, "--out", str(tmp_path / "m"), "--no-report"]) == 0
    err = capsys.readouterr().err
    assert unsaid(err, "1 case round(s)", f"{records[-1]['case_id']} round 0 (shard 2/2)") == [], err
    assert cli.main(["merge", *paths, "--out", str(tmp_path / "m2"), "--no-report", "--require-complete"]) == 2
    joined = merge.join(paths, tmp_path / "m3")
    assert joined.header["missing_cases"] == [f"{records[-1]['case_id']} round 0 (shard 2/2)"]


def test_merge_refuses_to_replace_a_merge_of_other_shards_and_replaces_one_of_the_same(tmp_path, capsys):
    """A merge into a folder holding another night's merge would have replaced it without a word."""
    records = read_jsonl(CPU)
    one = str(write_jsonl(tmp_path / "s1.jsonl", _shard_records(records, 1, 2, "s1", records[1:6])))
    two = str(write_jsonl(tmp_path / "s2.jsonl", _shard_records(records, 2, 2, "s2", records[6:])))
    out = tmp_path / "m"
    assert cli.main(["merge", one, "--out", str(out), "--no-report"]) == 0  # shard 2 not there yet
    assert cli.main(["merge", one, two, "--out", str(out), "--no-report"]) == 0  # the late shard, merged again
    kept = (out / "results.jsonl").read_bytes()
    other = str(write_jsonl(tmp_path / "other.jsonl", _as_run(records, "another-night")))
    capsys.readouterr()
    assert cli.main(["merge", other, "--out", str(out), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert unsaid(err, f"--out {out}", "other shards", "s1", "choose another --out") == [], err
    assert (out / "results.jsonl").read_bytes() == kept


def test_a_header_whose_round_count_is_damaged_is_refused_not_allocated(tmp_path):
    # rounds = 10**12 once made `tebench run --out` build a set of a trillion case rounds (exit 70, out of memory).
    lines = CPU.read_text().splitlines()
    header = json.loads(lines[0])
    header["rounds"] = 10**12
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with pytest.raises(reader.SchemaError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader.read(path)
    assert f"{path}:1: [rounds] = 1000000000000: must be at most 1000" in str(err.value)
