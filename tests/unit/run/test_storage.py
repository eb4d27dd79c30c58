"""Storage failures and concurrent writers: nothing finished is lost or mislabelled.

Runs use the stub worker of ``conftest`` (``RunOptions.python``): a tiny script
that answers the runner's worker contract instantly, so the runner's own
behaviour is tested without torch. Disk-full and read-only file systems are injected (monkeypatched
writes raising ENOSPC / EROFS), since no size-limited file system is available.
"""

from __future__ import annotations

import errno
import json
import os
import textwrap
from pathlib import Path

import pytest

from tebench.store import atomic, reader as results
from tebench.store.writer import Writer
from tebench import cli
from tebench.plan import matrix
from tebench.errors import RunError, StorageError
from tebench.run import runner
from tebench.run.options import RunOptions
from tebench.run.outdir import LOCK_NAME, lock_out
from tebench.schema.protocol import EXIT_STORAGE
from tebench.worker import main as worker
from conftest import CPU_ENV, MICRO_DISTILL, MICRO_GPT, unsaid

MATRIX = """
name = "storage"
[settings]
steps = 3
warmup = 1
[axes]
modes = ["PT-FP32", "PT-AMP"]
""" + MICRO_GPT + MICRO_DISTILL

ENV = CPU_ENV


@pytest.fixture
def stub(stub_worker) -> str:
    return stub_worker


@pytest.fixture
def mat(tmp_path) -> matrix.Matrix:
    path = tmp_path / "m.toml"
    path.write_text(textwrap.dedent(MATRIX))
    return matrix.load(path)


def opts(out: Path, stub: str, resume: bool = False) -> RunOptions:
    return RunOptions(out=out, python=stub, resume=resume, live=False)


def latest(out: Path) -> dict:
    return results.read(out).latest()


def test_a_full_run_with_the_stub_records_every_case(mat, stub, tmp_path):
    out = tmp_path / "out"
    runner.run(mat, ENV, opts(out, stub))
    assert {k[0] for k in latest(out)} == {c.id for c in matrix.iter_cases(mat)}
    assert all(r.status == "ok" for r in latest(out).values())
    assert (out / LOCK_NAME).is_file()  # the lock file stays; the lock itself went with the run


def test_second_writer_is_refused_while_the_first_holds_out(mat, stub, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with lock_out(out):  # a separate open file: flock conflicts as between two processes
        with pytest.raises(RunError, match=r"in use by another tebench run \(pid \d+"):
            runner.run(mat, ENV, opts(out, stub))
    assert not (out / results.RESULTS_NAME).exists()
    runner.run(mat, ENV, opts(out, stub))  # released: the next run goes ahead
    assert len(latest(out)) == 4


def test_second_cli_writer_exits_2(mat, tmp_path, tebench_cli):
    out = tmp_path / "out"
    out.mkdir()
    with lock_out(out):
        proc = tebench_cli("run", mat.source, "--out", str(out), "--quiet", "--no-report", timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert unsaid(proc.stderr, out, "in use") == [], proc.stderr
    assert "Traceback" not in proc.stderr


def _fail_after(monkeypatch, n: int, err: int = errno.ENOSPC) -> None:
    """Make Writer.append fail from its (n+1)-th call on, as a full disk would."""
    original = Writer.append
    calls = {"n": 0}

    def append(self, record):
        calls["n"] += 1
        if calls["n"] > n:
            raise OSError(err, os.strerror(err), str(self.path))
        original(self, record)

    monkeypatch.setattr(Writer, "append", append)


def test_disk_full_while_recording_stops_cleanly_and_resume_completes(mat, stub, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _fail_after(monkeypatch, 3)  # the header and two cases fit; the third case's record does not
    with pytest.raises(StorageError, match=r"ENOSPC \(No space left on device\).*--resume"):
        runner.run(mat, ENV, opts(out, stub))
    monkeypatch.undo()
    first = latest(out)
    assert len(first) == 2 and all(r.status == "ok" for r in first.values())
    runner.run(mat, ENV, opts(out, stub, resume=True))
    final = results.read(out)
    assert len(final.latest()) == 4 and all(r.status == "ok" for r in final.latest().values())
    assert len(final.cases) == 4  # nothing recorded twice, nothing recorded as failed


def test_worker_that_cannot_write_its_result_leaves_the_case_to_resume(mat, stub, tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("STUB_FAULT", "distill/micro/PT-FP32=enospc")
    with pytest.raises(StorageError, match="distill/micro/PT-FP32: the worker could not write its result"):
        runner.run(mat, ENV, opts(out, stub))
    assert "distill/micro/PT-FP32" not in {k[0] for k in latest(out)}  # not recorded as failed
    monkeypatch.delenv("STUB_FAULT")
    runner.run(mat, ENV, opts(out, stub, resume=True))
    assert {r.status for r in latest(out).values()} == {"ok"} and len(latest(out)) == 4


def test_a_worker_dying_for_another_reason_is_still_recorded_as_failed(mat, stub, tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("STUB_FAULT", "gpt/micro/PT-AMP=die")
    runner.run(mat, ENV, opts(out, stub))
    rec = latest(out)[("gpt/micro/PT-AMP", 0)]
    assert rec.status == "failed" and "exit code 3" in (rec.reason or "")


def test_out_is_a_file(mat, stub, tmp_path, capsys):
    out = tmp_path / "out"
    out.write_text("not a directory")
    with pytest.raises(StorageError, match="is a file, not a directory"):
        runner.run(mat, ENV, opts(out, stub))
    # The CLI checks OUT before probing the hardware: exit 2 at once.
    assert cli.main(["run", mat.source, "--out", str(out), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert unsaid(err, str(out), "not a directory") == [], err


def test_resume_where_no_run_is_says_it_starts_a_new_one(mat, stub, tmp_path, capsys):
    """A typo in --out must not turn a resume into a whole new run without a word."""
    out = tmp_path / "typo"
    runner.run(mat, ENV, opts(out, stub, resume=True))
    err = capsys.readouterr().err
    assert unsaid(err, "--resume", "no run to continue", str(out), "starting a new run") == [], err
    assert len(latest(out)) == 4


def test_out_is_a_link_to_nowhere(mat, stub, tmp_path, capsys):
    """mkdir through a dangling link says only "File exists": the link and its target are named instead."""
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "gone")
    with pytest.raises(StorageError, match="symbolic link to .*gone, which does not exist"):
        runner.run(mat, ENV, opts(out, stub))
    assert cli.main(["run", mat.source, "--out", str(out), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert unsaid(err, str(out), "gone", "does not exist") == [] and "File exists" not in err, err


def test_a_report_folder_linked_to_nowhere_is_named_and_the_results_stay(mat, stub, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report").symlink_to(tmp_path / "gone")
    assert cli.main(["run", mat.source, "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert unsaid(err, "report", "gone", "does not exist") == [] and "File exists" not in err, err
    assert len(latest(out)) == 4  # measured before the report was refused, and kept
    assert cli.main(["report", str(out / "results.jsonl"), "--out", str(out / "report")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_read_only_file_system_is_named(mat, stub, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    real_open = os.open

    def read_only(path, flags, *args):
        if str(path).endswith(LOCK_NAME):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(runner.os, "open", read_only)
    with pytest.raises(StorageError, match=r"EROFS \(Read-only file system\)"):
        runner.run(mat, ENV, opts(out, stub))


def test_worker_reports_a_result_it_cannot_write(tmp_path, monkeypatch, capsys):
    target = tmp_path / "r.json"

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", full)
    assert worker._deliver(target, {"status": "ok"}) == EXIT_STORAGE == EXIT_STORAGE
    monkeypatch.undo()
    assert "No space left on device" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no result, no stray .tmp
    assert worker._deliver(target, {"status": "ok"}) == 0 and json.loads(target.read_text()) == {"status": "ok"}


def test_atomic_write_keeps_the_old_file_and_leaves_no_tmp(tmp_path, monkeypatch):
    target = tmp_path / "chart.png"
    atomic.write_bytes(target, b"old")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(OSError):
        atomic.write_bytes(target, b"new and longer")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["chart.png"]


def test_report_on_a_full_disk_exits_2_without_stray_files(tmp_path, monkeypatch, capsys):
    from conftest import FIXTURES

    out = tmp_path / "report"
    real = atomic.write_bytes
    calls = {"n": 0}

    def fill_up(path, data):
        calls["n"] += 1
        if calls["n"] == 2:  # the second chart finds the disk full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(atomic, "write_bytes", fill_up)
    assert cli.main(["report", str(FIXTURES / "cpu-smoke.jsonl"), "--out", str(out)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
