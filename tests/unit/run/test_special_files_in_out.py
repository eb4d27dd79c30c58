"""Reads and writes a run makes in OUT and in the probe cache touch regular files only: a FIFO there never
blocks a command."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tebench.errors import StorageError
from tebench.plan import environment
from tebench.run.outdir import check_out_dir


@pytest.mark.parametrize("name", ["results.jsonl", ".lock"])
def test_a_fifo_in_out_is_refused_before_anything_opens_it(tmp_path, name):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / name)
    with pytest.raises(StorageError, match=f"{name} there is a FIFO, not a regular file"):
        check_out_dir(out)


def test_a_regular_results_file_in_out_is_fine(tmp_path):
    (tmp_path / "results.jsonl").write_text("")
    check_out_dir(tmp_path)


def test_a_fifo_as_the_probe_cache_is_no_cache_and_never_blocks(tmp_path, monkeypatch):
    """tebench list reads the cached probe answer: a FIFO there used to block it forever."""
    monkeypatch.setenv("TEBENCH_CACHE_DIR", str(tmp_path))
    key = environment.machine_key(None, None)
    os.mkfifo(tmp_path / f"env-{key}.json")
    probed = []

    def fake_probe(timeout, python, environ):
        probed.append(True)
        return environment.Environment(device_type="cpu"), False

    monkeypatch.setattr(environment, "_run_probe", fake_probe)
    env = environment.probe(cached=True)
    assert probed and env.device_type == "cpu"


def test_a_usable_probe_cache_is_still_read(tmp_path, monkeypatch):
    monkeypatch.setenv("TEBENCH_CACHE_DIR", str(tmp_path))
    key = environment.machine_key(None, None)
    (tmp_path / f"env-{key}.json").write_text(json.dumps(environment.Environment(device_type="cpu").to_dict()))
    monkeypatch.setattr(environment, "_run_probe", lambda *a: pytest.fail("probed although the cache was usable"))
    assert environment.probe(cached=True).device_type == "cpu"


def test_merge_into_an_out_whose_results_file_is_a_fifo_is_refused_without_blocking(tmp_path):
    """merge read the first line of OUT/results.jsonl with an unbounded readline(): a FIFO there blocked it."""
    from tebench.bounded import InputError
    from tebench.run.merge import check_target

    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "results.jsonl")
    with pytest.raises(InputError, match="FIFO"):
        check_target([tmp_path / "shard1"], out)


def test_merge_into_an_out_whose_first_line_is_huge_is_refused_without_holding_it(tmp_path, monkeypatch):
    from tebench import bounded
    from tebench.run.merge import MergeError, check_target

    monkeypatch.setattr(bounded, "RESULTS_LINE_MAX_BYTES", 1024)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text(json.dumps({"merged_from": ["x" * 4096]}) + "\n")
    with pytest.raises(MergeError, match="not of a merge"):
        check_target([tmp_path / "shard1"], out)


def test_a_users_parent_pid_never_reaches_a_worker():
    """ab --head-env TEBENCH_PARENT_PID=<dead pid> would have every worker watch a dead process and end itself."""
    from tebench.run.executor import Executor

    class Stub:  # what _child_env reads of an Executor
        opts = type("O", (), {"compile_cache": None, "env": {"TEBENCH_PARENT_PID": "999999"}})()

    assert Executor._child_env(Stub(), None)["TEBENCH_PARENT_PID"] == str(os.getpid())


def test_out_given_as_a_device_names_what_it_is(tmp_path):
    """``--out /dev/null`` is refused as what it is: calling it "a file" sent users looking for one."""
    with pytest.raises(StorageError, match="--out /dev/null: is a character device, not a directory"):
        check_out_dir(Path("/dev/null"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(StorageError, match="is a FIFO, not a directory"):
        check_out_dir(fifo)
