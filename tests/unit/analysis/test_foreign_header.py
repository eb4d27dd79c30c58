"""A header of another run above a run's records (files joined by hand): the records are of no run the file
holds. They were read under that header, reported with its machine, and `history add` stored them under its
run id, twice once the real file was added too."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from tebench.analysis import judged_run
from tebench.store import history

FOREIGN = "20260101T000000-deadbeef"


@pytest.fixture
def joined(tmp_path):
    lines = (FIXTURES / "cpu-smoke.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header["run_id"] = FOREIGN
    path = tmp_path / "joined.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return path


def test_records_under_another_runs_header_are_left_out_with_a_warning(joined):
    with pytest.warns(UserWarning, match=rf"case record\(s\) of a run with no header in the file, left out .*{FOREIGN}"):
        run = judged_run.read(joined)
    assert run.cases == [] and run.run_ids == [FOREIGN]


def test_history_does_not_store_them_under_that_header(joined, tmp_path):
    db = tmp_path / "h.db"
    with pytest.warns(UserWarning, match="no header in the file"):
        runs = judged_run.runs_in(joined)
    assert [len(r.cases) for r in runs] == [0]
    added = history.add(db, runs[0])
    assert (added.run_id, added.new_cases, added.total_cases) == (FOREIGN, 0, 0)
    assert history.frame(db).empty
