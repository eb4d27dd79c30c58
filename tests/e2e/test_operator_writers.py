"""Nothing an operator does loses a night: every writer of a run directory takes its lock, no
command overwrites its own inputs, case files never collide, and bad --devices / --out are
refused before anything is created.

Most tests use the stub worker (``stub_cli``): what they check is the runner's and the
CLI's. Two end-to-end tests run real workers on the CPU: a merge into a running OUT, and two
sizes whose names read the same run at once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CPU_ENV, FIXTURES, MICRO_GPT, ROOT, read_jsonl, unsaid
from tebench.run import ab
from tebench.plan import environment as detect
from tebench.plan import matrix
from tebench.errors import RunError
from tebench.schema.environment import GPU
from tebench.run import runner
from tebench.run.executor import slug
from tebench.run.options import RunOptions
from tebench.run.outdir import LOCK_NAME, OutLock, lock_out, run_dir_of
from tebench.workloads import size_of

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

MATRIX = """
name = "writers"
[settings]
steps = 3
warmup = 1
profile_steps = 0
[axes]
modes = ["PT-FP32"]
""" + MICRO_GPT

# Two sizes whose names have no ASCII letter: their readable file names are the same.
TWIN_SIZES = """
name = "twins"
[settings]
steps = 2
warmup = 1
profile_steps = 0
[axes]
modes = ["PT-FP32"]
[sizes.gpt."小"]
vocab = 16
d_model = 16
heads = 2
layers = 1
ffn = 32
seq = 8
batch = 2
[sizes.gpt."大"]
vocab = 16
d_model = 32
heads = 2
layers = 2
ffn = 64
seq = 8
batch = 2
"""


@pytest.fixture
def mat_file(tmp_path) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(textwrap.dedent(MATRIX))
    return path


@pytest.fixture
def done_run(mat_file, tmp_path, stub_cli) -> Path:
    """A finished run directory (stub worker)."""
    out = tmp_path / "done"
    stub_cli("run", str(mat_file), "--out", str(out), "--quiet", "--no-report", check=True)
    return out


def _no_probe(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the hardware was probed before the input was checked")

    monkeypatch.setattr(detect, "probe", refuse)
    monkeypatch.setattr(ab, "probe", refuse)


# --- case file names ----------------------------------------------------------------------------

def test_names_that_read_the_same_get_different_files():
    pairs = [("gpt/小/PT-FP32", "gpt/大/PT-FP32"), ("gpt/a b/PT-FP32", "gpt/a+b/PT-FP32"),
             ("gpt/a/b/PT-FP32", "gpt/a__b/PT-FP32"), ("gpt/x/PT-FP32", "gpt/X/PT-FP32")]
    for a, b in pairs:
        assert slug(a) != slug(b), (a, b)
    assert slug("gpt/小/PT-FP32").startswith("gpt__x__PT-FP32.")  # readable where it can be
    assert slug("gpt/tutorial/PT-AMP") == slug("gpt/tutorial/PT-AMP")  # the same id, the same files


@FAST
@given(ids=st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\0"), min_size=1,
                            max_size=300), min_size=2, max_size=20, unique=True))
def test_case_file_names_are_unique_ascii_and_short(ids):
    names = [slug(i) for i in ids]
    assert len(set(names)) == len(names)
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9._-]+", name), name
        # With the round and the longest suffix (".r999.result.json.tmp"): within one path component.
        assert len(f"{name}.r999.result.json.tmp".encode()) <= 255


# --- the lock: every writer of a run directory --------------------------------------------------

def _holder_refusal(proc) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert re.search(r"is in use by another tebench run \(pid \d+ on .+ since .+: tebench holder\)",
                     proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", [
    lambda out, mat: ["run", mat, "--out", out, "--quiet", "--no-report"],
    lambda out, mat: ["run", mat, "--out", out, "--quiet", "--no-report", "--resume"],
    lambda out, mat: ["merge", str(FIXTURES / "cpu-smoke.jsonl"), "--out", out, "--no-report"],
    lambda out, mat: ["report", str(FIXTURES / "cpu-smoke.jsonl"), "--out", out],
    lambda out, mat: ["report", str(FIXTURES / "cpu-smoke.jsonl"), "--out", f"{out}/report"],
    lambda out, mat: ["compare", str(FIXTURES / "cpu-smoke.jsonl"), str(FIXTURES / "cpu-smoke.jsonl"),
                      "--out", f"{out}/compare.md"],
    lambda out, mat: ["ab", mat, "--out", out, "--rounds", "1", "--quiet"],
], ids=["run", "run-resume", "merge", "report", "report-subdir", "compare", "ab"])
def test_a_locked_run_directory_is_refused_by_every_writer(command, done_run, mat_file, stub_cli, monkeypatch):
    _no_probe(monkeypatch)  # refused at once, before any probe
    before = {p.name: p.read_bytes() for p in done_run.iterdir() if p.is_file() and p.name != LOCK_NAME}
    with lock_out(done_run, "tebench holder"):  # another process's lock: flock conflicts per open file
        proc = stub_cli(*command(str(done_run), str(mat_file)))
    _holder_refusal(proc)
    after = {p.name: p.read_bytes() for p in done_run.iterdir() if p.is_file() and p.name != LOCK_NAME}
    assert after == before and not (done_run / "report").exists()


def test_ab_locks_its_side_directories(tmp_path, mat_file, stub_cli, stub_worker, monkeypatch):
    monkeypatch.setattr(ab, "probe", lambda *a, **k: CPU_ENV.model_copy())
    out = tmp_path / "ab"
    (out / "base").mkdir(parents=True)
    with lock_out(out / "base", "tebench holder"):
        proc = stub_cli("ab", str(mat_file), "--out", str(out), "--rounds", "1", "--quiet",
                        "--base-python", stub_worker, "--head-python", stub_worker)
    _holder_refusal(proc)
    assert not (out / "head").exists() and not (out / "base" / "results.jsonl").exists()


@FAST
@given(data=st.data())
def test_lock_conflicts_between_writers(data, tmp_path_factory):
    # Any two holders of one directory: the second is refused naming the first, whatever the order
    # of taking and releasing; once released, the next one gets it.
    out = tmp_path_factory.mktemp("out")
    holders = data.draw(st.lists(st.sampled_from(["tebench run", "tebench merge", "tebench ab"]),
                                 min_size=1, max_size=4))
    with OutLock(out, holders[0]) as first:
        assert first.held
        for other in holders[1:]:
            with pytest.raises(RunError, match=re.escape(f": {holders[0]})")):
                with lock_out(out, other):
                    pass
    with lock_out(out, holders[-1]):
        assert holders[-1] in (out / LOCK_NAME).read_text()


def test_run_dir_of(tmp_path, done_run):
    assert run_dir_of(done_run) == done_run
    assert run_dir_of(done_run / "report") == done_run
    assert run_dir_of(done_run / "compare.md") == done_run
    assert run_dir_of(tmp_path / "elsewhere" / "x.md") is None
    assert run_dir_of(tmp_path) is None  # the parent of a run directory is not one
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / LOCK_NAME).write_text("12345\n")  # another tool's lock file (pytest's)
    assert run_dir_of(tmp_path / "elsewhere") is None


def test_a_refused_run_leaves_no_new_directory(tmp_path, mat_file, stub_cli, monkeypatch):
    one_gpu = CPU_ENV.model_copy(update={"device_type": "cuda", "gpus": [GPU(index=0, name="test", capability=[9, 0], memory_bytes=1 << 30, multiprocessors=100)]})
    monkeypatch.setattr(detect, "probe", lambda *a, **k: one_gpu)
    out = tmp_path / "new" / "out"
    proc = stub_cli("run", str(mat_file), "--out", str(out), "--devices", "0,1", "--quiet")
    assert proc.returncode == 2, proc.stderr
    assert unsaid(proc.stderr, "--devices 0,1", "no such GPU", "['1']", "1 visible") == [], proc.stderr
    assert not (tmp_path / "new").exists()


def test_ab_device_beyond_the_visible_gpus_is_refused(tmp_path, mat_file, stub_cli, stub_worker, monkeypatch):
    one_gpu = CPU_ENV.model_copy(update={"device_type": "cuda", "gpus": [GPU(index=0, name="test", capability=[9, 0], memory_bytes=1 << 30, multiprocessors=100)]})
    # Restricted to the device asked for, torch sees no GPU; unrestricted, one.
    monkeypatch.setattr(ab, "probe", lambda *a, cached=False, **k: one_gpu if cached else CPU_ENV.model_copy())
    out = tmp_path / "ab"
    proc = stub_cli("ab", str(mat_file), "--out", str(out), "--device", "3", "--rounds", "1", "--quiet",
                    "--base-python", stub_worker, "--head-python", stub_worker)
    assert proc.returncode == 2, proc.stderr
    assert unsaid(proc.stderr, "--device 3", "no such GPU", "1 visible", "--base-python") == [], proc.stderr
    assert not out.exists()


def test_ab_device_on_a_machine_without_a_gpu_says_the_cpu_runs(tmp_path, mat_file, stub_cli, stub_worker, monkeypatch):
    """`ab --device 7` on a CPU machine runs, as `run --devices` does, and says the index was not used."""
    monkeypatch.setattr(ab, "probe", lambda *a, **k: CPU_ENV.model_copy())
    proc = stub_cli("ab", str(mat_file), "--out", str(tmp_path / "ab"), "--device", "7", "--rounds", "1", "--quiet",
                    "--base-python", stub_worker, "--head-python", stub_worker)
    assert proc.returncode in (0, 1), proc.stderr
    assert unsaid(proc.stderr, "--device 7", "no CUDA GPU", "both sides run on the CPU") == [], proc.stderr
    assert (tmp_path / "ab" / "head" / "results.jsonl").exists()

# --- no command overwrites its own inputs -------------------------------------------------------

def test_compare_never_writes_over_an_input(done_run, tmp_path, stub_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = (done_run / "results.jsonl").read_bytes()
    other = str(FIXTURES / "cpu-smoke.jsonl")
    for out in (str(done_run), str(done_run / "results.jsonl"), f"{done_run}/../done/results.jsonl",
                "done/results.jsonl"):
        for base, head in ((str(done_run), other), (other, str(done_run / "results.jsonl"))):
            proc = stub_cli("compare", base, head, "--out", out)
            assert proc.returncode == 2 and f"--out {out}: " in proc.stderr, (out, proc.stderr)
            assert "is a directory" in proc.stderr or ("overwrite" in proc.stderr and "input" in proc.stderr)
    link = tmp_path / "link.jsonl"
    link.symlink_to(done_run / "results.jsonl")
    proc = stub_cli("compare", str(done_run), other, "--out", str(link))
    assert proc.returncode == 2 and "overwrite" in proc.stderr and "input" in proc.stderr, proc.stderr
    assert (done_run / "results.jsonl").read_bytes() == before
    # Into the run directory, beside the results: allowed (and under its lock).
    proc = stub_cli("compare", str(done_run), str(done_run), "--out", str(done_run / "compare.md"))
    assert proc.returncode in (0, 1) and (done_run / "compare.md").is_file(), proc.stderr


def test_merge_never_writes_over_a_shard_or_another_run(done_run, tmp_path, stub_cli):
    before = (done_run / "results.jsonl").read_bytes()
    for shard in (str(done_run), str(done_run / "results.jsonl")):
        proc = stub_cli("merge", shard, "--out", str(done_run), "--no-report")
        assert proc.returncode == 2 and "is the shard" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = stub_cli("merge", str(FIXTURES / "cpu-smoke.jsonl"), "--out", str(done_run), "--no-report")
    assert proc.returncode == 2, proc.stderr
    run_id = read_jsonl(done_run / "results.jsonl")[0]["run_id"]
    assert unsaid(proc.stderr, done_run / "results.jsonl", "already holds", run_id) == [], proc.stderr
    assert (done_run / "results.jsonl").read_bytes() == before
    # An earlier merge may be replaced: a late shard merged again.
    merged = tmp_path / "merged"
    for _ in range(2):
        stub_cli("merge", str(done_run), "--out", str(merged), "--no-report", check=True)


def test_report_into_the_run_directory_keeps_its_results(done_run, stub_cli):
    before = (done_run / "results.jsonl").read_bytes()
    proc = stub_cli("report", str(done_run), "--out", str(done_run))
    assert proc.returncode == 0, proc.stderr
    assert (done_run / "index.html").is_file() and (done_run / "results.jsonl").read_bytes() == before
    proc = stub_cli("report", str(done_run / "results.jsonl"), "--out", str(done_run / "results.jsonl"))
    assert proc.returncode == 2 and "is a file, not a directory" in proc.stderr


def test_report_refuses_an_input_it_would_replace(tmp_path, stub_cli):
    out = tmp_path / "r"
    out.mkdir()
    (out / "cases.csv").write_text((FIXTURES / "cpu-smoke.jsonl").read_text())
    proc = stub_cli("report", str(out / "cases.csv"), "--out", str(out))
    assert proc.returncode == 2 and "overwrite" in proc.stderr and "input" in proc.stderr, proc.stderr


# --- --devices and --out, checked before anything is created --------------------------------------

@pytest.mark.parametrize("value,fragment", [
    ("²", "'²': not a device index"),
    ("１", "'１': not a device index"),
    ("-1", "'-1': not a device index"),
    ("0,,1", "'': not a device index"),
    ("", "'': not a device index"),
    ("0,", "'': not a device index"),
    ("0,0", "GPU 0 given more than once"),
    ("1,01", "GPU 1 given more than once"),
])
def test_bad_devices_are_refused_before_out_exists(value, fragment, tmp_path, mat_file, stub_cli, monkeypatch):
    _no_probe(monkeypatch)
    out = tmp_path / "out"
    proc = stub_cli("run", str(mat_file), "--out", str(out), "--devices", value)
    assert proc.returncode == 2 and f"--devices {value}: " in proc.stderr and fragment in proc.stderr, proc.stderr
    assert not out.exists()
    if "," not in value:
        proc = stub_cli("ab", str(mat_file), "--out", str(out), "--device", value)
        assert proc.returncode == 2 and f"--device {value}: " in proc.stderr and fragment in proc.stderr
        assert not out.exists()
    proc = stub_cli("ab", str(mat_file), "--out", str(out), "--device", "0,1")
    assert proc.returncode == 2 and "one GPU index" in proc.stderr and not out.exists()


def _every_out_command(out: str, mat: str, db: str) -> list[list[str]]:
    cpu = str(FIXTURES / "cpu-smoke.jsonl")
    return [["run", mat, "--out", out], ["ab", mat, "--out", out], ["report", cpu, "--out", out],
            ["compare", cpu, cpu, "--out", out], ["merge", cpu, "--out", out],
            ["history", "report", "--db", db, "--out", out]]


def test_bad_out_is_refused_by_every_command_before_anything_runs(tmp_path, mat_file, stub_cli, monkeypatch):
    import sqlite3

    _no_probe(monkeypatch)
    db = tmp_path / "h.db"
    sqlite3.connect(db).close()
    monkeypatch.chdir(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for value, fragment in (("", "--out '': empty"), ("   ", "--out '   ': empty"),
                            (f"{a_file}/sub", f"cannot create it: {a_file} is a file")):
        for args in _every_out_command(value, str(mat_file), str(db)):
            if args[0] == "compare" and value.strip():
                fragment_here = "no such directory"
            else:
                fragment_here = fragment
            proc = stub_cli(*args)
            assert proc.returncode == 2 and fragment_here in proc.stderr, (args, proc.stderr)
            assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "h.db", "m.toml", "stub-python"]


def test_an_unwritable_out_is_refused_early(tmp_path, mat_file, stub_cli, monkeypatch):
    # As root, permission bits do not refuse anything: the check asks access(), so ask it "no".
    from tebench.cli import paths

    _no_probe(monkeypatch)
    locked = tmp_path / "ro"
    locked.mkdir()
    monkeypatch.setattr(paths.os, "access", lambda path, mode: Path(path) != locked)
    proc = stub_cli("run", str(mat_file), "--out", str(locked / "out"))
    assert proc.returncode == 2, proc.stderr
    assert unsaid(proc.stderr, locked / "out", locked, "not writable") == [], proc.stderr
    proc = stub_cli("merge", str(FIXTURES / "cpu-smoke.jsonl"), "--out", str(locked))
    assert proc.returncode == 2, proc.stderr
    assert unsaid(proc.stderr, locked, "not writable") == [], proc.stderr
    proc = stub_cli("compare", str(FIXTURES / "cpu-smoke.jsonl"), str(FIXTURES / "cpu-smoke.jsonl"),
                    "--out", str(locked / "c.md"))
    assert proc.returncode == 2 and unsaid(proc.stderr, str(locked), "not writable") == [], proc.stderr
    assert list(locked.iterdir()) == []


# --- the runner checks that a result is of the case it launched --------------------------------

WRONG_CASE_WORKER = """
import argparse, json, os, sys
args = sys.argv[1:]
if args[:2] == ["-m", "tebench.worker"]:
    args = args[2:]
p = argparse.ArgumentParser()
p.add_argument("--case"); p.add_argument("--result"); p.add_argument("--progress", action="store_true")
a = p.parse_args(args)
case = json.load(open(a.case))
ran = os.environ.get("ECHO_CASE_ID") or "/".join([case["workload"], case["size"], case["mode"]])
json.dump({"case_id": ran, "status": "ok", "device": {"type": "cpu", "name": "stub"},
           "timing": {"samples_ms": [1.0, 1.1, 1.2]}, "memory": {"kind": "cpu", "peak_rss_bytes": 1000}},
          open(a.result, "w"))
"""


def test_a_result_of_another_case_is_recorded_as_failed(tmp_path, mat_file):
    worker = tmp_path / "echo-python"
    worker.write_text(f"#!{sys.executable}\n" + WRONG_CASE_WORKER)
    worker.chmod(0o755)
    mat = matrix.load(mat_file)
    (case_id,) = [c.id for c in matrix.iter_cases(mat)]
    runner.run(mat, CPU_ENV, RunOptions(out=tmp_path / "right", python=str(worker), live=False))
    (rec,) = [r for r in read_jsonl(tmp_path / "right" / "results.jsonl") if r["type"] == "case"]
    assert rec["status"] == "ok" and rec["case_id"] == case_id
    runner.run(mat, CPU_ENV, RunOptions(out=tmp_path / "wrong", python=str(worker), live=False,
                                        env={"ECHO_CASE_ID": "gpt/other/PT-AMP"}))
    (rec,) = [r for r in read_jsonl(tmp_path / "wrong" / "results.jsonl") if r["type"] == "case"]
    assert rec["status"] == "failed" and "timing" not in rec
    assert "'gpt/other/PT-AMP'" in rec["reason"] and repr(case_id) in rec["reason"], rec["reason"]


# --- end to end, real workers on the CPU --------------------------------------------------------

def _child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **(extra or {})}


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append((int(entry.name), cmdline))
    return found


def _wait_for(what: str, check, proc: subprocess.Popen, limit_s: float = 300):
    # The limit only ends a broken test; nothing asserted depends on how long anything took.
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        if proc.poll() is not None:
            raise AssertionError(f"the run ended ({proc.returncode}) before {what}: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {limit_s} s")


def test_merge_into_a_running_out_is_refused_and_the_run_keeps_its_records(tmp_path, tebench_cli):
    # Two cases: PT-FP32 trains; PT-AMP hangs (test hook) until this test ends its worker, so the
    # run is certainly still running when the merge comes, however loaded the machine is.
    mat = tmp_path / "m.toml"
    mat.write_text(textwrap.dedent(MATRIX).replace('modes = ["PT-FP32"]', 'modes = ["PT-FP32", "PT-AMP"]'))
    out = tmp_path / "out"
    run = subprocess.Popen([sys.executable, "-m", "tebench", "run", str(mat), "--out", str(out), "--quiet",
                            "--no-report", "--launch", "cold"], cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           env=_child_env({"TEBENCH_TEST_FAULT": "*/PT-AMP=hang"}))
    try:
        lock = out / LOCK_NAME
        _wait_for("the run's lock", lambda: lock.is_file() and f"pid {run.pid} " in lock.read_text(), run)
        merge = tebench_cli("merge", str(FIXTURES / "cpu-smoke.jsonl"), "--out", str(out), "--no-report")
        assert merge.returncode == 2, (merge.stdout, merge.stderr)
        assert unsaid(merge.stderr, out, "in use", f"pid {run.pid} ") == [], merge.stderr
        assert "Traceback" not in merge.stderr
        hung = _wait_for("the hanging worker", lambda: [p for p, cmd in _children(run.pid)
                                                        if "tebench.worker" in cmd and "PT-AMP" in cmd], run)
        os.kill(hung[0], 9)  # the one worker this test's run started for the hanging case
        stdout, stderr = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, stderr
    records = read_jsonl(out / "results.jsonl")
    assert records[0]["type"] == "header" and "merged_from" not in records[0]
    by_mode = {r["case"]["mode"]: r for r in records if r["type"] == "case"}
    assert by_mode["PT-FP32"]["status"] == "ok" and by_mode["PT-FP32"]["timing"]["samples_ms"]
    assert by_mode["PT-AMP"]["status"] == "failed" and "signal 9" in by_mode["PT-AMP"]["reason"]


def test_sizes_that_read_the_same_keep_their_own_measurements_and_logs(tmp_path, tebench_cli):
    # On the CPU --devices is not checked against GPUs: two device slots run the cases at once,
    # each in its own worker, which is when shared hand-off files would swap their results.
    from tebench.worker.models import WORKLOADS

    mat = tmp_path / "twins.toml"
    mat.write_text(textwrap.dedent(TWIN_SIZES))
    expected = {name: WORKLOADS["gpt"].params(size) for name, size in
                ((c.size, size_of(c)) for c in matrix.iter_cases(matrix.load(mat)))}
    assert len(set(expected.values())) == 2
    # One after the other the two would share a log (the first one's lost); at once, also the
    # hand-off files: --devices covers both.
    out = tmp_path / "out"
    tebench_cli("run", str(mat), "--out", str(out), "--quiet", "--no-report", "--devices", "0,1", check=True)
    cases = [r for r in read_jsonl(out / "results.jsonl") if r["type"] == "case"]
    assert {r["case"]["size"] for r in cases} == {"小", "大"}
    logs = set()
    for r in cases:
        assert r["status"] == "ok", r.get("reason")
        assert r["memory"]["param_count"] == expected[r["case"]["size"]], r["case_id"]
        log = out / r["log"]
        assert log.is_file() and f"# {r['case_id']} round 0" in log.read_text()
        logs.add(log)
    assert len(logs) == 2 and sorted(p.name for p in (out / "logs").iterdir()) == sorted(p.name for p in logs)


def test_devices_on_a_cpu_machine_run_as_cpu_slots_and_say_so(tmp_path, mat_file, stub_cli):
    """--devices without a CUDA GPU: the run goes on (the indices are CPU slots), and says there is no GPU."""
    out = tmp_path / "out"
    proc = stub_cli("run", str(mat_file), "--out", str(out), "--devices", "0", "--quiet", "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert unsaid(proc.stderr, "--devices 0", "no CUDA GPU", "CPU, 1 at a time") == [], proc.stderr
    stub_cli("report", str(out), "--out", str(tmp_path / "rep"), check=True)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert unsaid(md, "no CUDA GPU", "CPU slots") == []
