"""End-to-end runs of the CLI on tiny models, on the CPU, as a user runs them.

Failures are produced with the documented test hook TEBENCH_TEST_FAULT
("GLOB=crash|hang|oom|diverge"), so the runner's handling of each is real:
a real SIGSEGV, a real hang killed by the timeout. Tests whose subject is the
runner (resume, rounds, refusals) rather than the model use the stub worker of
``conftest`` (``stub_cli``), which answers at once without torch.
"""

from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import MICRO_DISTILL, MICRO_GPT, ROOT, unsaid

from tebench.analysis.judged_run import CaseRounds
from tebench.analysis.parity import PARITY_RULES
from tebench.run.prestart import launch_bound
from tebench.run.prestart import default_prestart_depth

TINY = """
name = "tiny"
[settings]
steps = 6
warmup = 1
timeout_s = 120
[axes]
modes = ["PT-FP32", "PT-AMP", "TE-BF16", "TE-FP8"]
[fp8]
recipes = ["delayed"]
formats = ["E4M3", "HYBRID"]
amax_history_len = [16]
""" + MICRO_GPT + MICRO_DISTILL


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(textwrap.dedent(TINY))
    return path


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]


def cases(out: Path) -> dict[str, dict]:
    return {r["case_id"]: r for r in records(out) if r["type"] == "case"}


def test_run_records_everything_and_skips_te_with_reasons(tiny, tmp_path, tebench_cli):
    out = tmp_path / "run"
    proc = tebench_cli("run", str(tiny), "--out", str(out), check=True)
    head = records(out)[0]
    assert head["type"] == "header" and head["matrix"]["name"] == "tiny" and head["env"]["device_type"] == "cpu"
    assert head["command"][:2] == ["tebench", "run"] and len(head["matrix"]["sha256"]) == 64
    got = cases(out)
    assert len(got) == 10
    for cid, rec in got.items():
        if "/TE-" in cid:
            assert rec["status"] == "skipped" and "CUDA GPU" in rec["reason"]
            continue
        assert rec["status"] == "ok", rec.get("reason")
        assert len(rec["timing"]["samples_ms"]) == 6 and rec["timing"]["stats"]["median"] > 0
        assert rec["memory"]["peak_rss_bytes"] > 0
        assert len(rec["loss"]["per_step"]) == 7
        assert rec["throughput"]["tokens_per_s"] > 0 and rec["throughput"]["mfu"] is None  # CPU: no known peak
        # 7 losses are too few to judge a curve: inconclusive, never a pass.
        assert rec["parity"]["verdict"] in ("reference", "inconclusive")
        # Judged over the whole run when it ended, and stored so: no reader judges it again.
        assert rec["parity"]["rules"] == PARITY_RULES
        if rec["parity"]["verdict"] == "inconclusive":
            assert "too short" in rec["parity"]["reason"]
        assert rec["setup"]["master_weights"].startswith("fp32 master weights")
        assert (out / rec["log"]).is_file()
    assert got["gpt/micro/PT-AMP"]["parity"]["reference_mode"] == "PT-FP32"
    assert "greedy_accuracy" in got["gpt/micro/PT-FP32"]["validation"]
    assert "ok" in proc.stderr and "skipped" in proc.stderr
    assert not (out / ".work").exists(), "hand-off files must not outlive their records"
    # What this tebench writes today reads back as typed records, losslessly, and the values
    # readers derive equal the ones the runner stored.
    from tebench.schema.records import CaseResult, RunHeader

    assert RunHeader.from_dict(head).to_dict() == head
    for rec in got.values():
        typed = CaseResult.from_dict(rec)
        assert typed.to_dict() == rec and list(typed.to_dict()) == list(rec)
        if typed.timing:
            assert typed.median_ms == rec["timing"]["stats"]["median"]
            rates = CaseRounds([typed], RunHeader.from_dict(head).peak_tflops).throughput()
            assert rates.to_dict() == rec["throughput"]


def test_failures_are_recorded_and_the_matrix_goes_on(tiny, tmp_path, tebench_cli):
    out = tmp_path / "run"
    fault = "gpt/micro/PT-AMP=crash;distill/micro/PT-FP32=hang;distill/micro/PT-AMP=oom;gpt/micro/PT-FP32=diverge"
    proc = tebench_cli("run", str(tiny), "--out", str(out), "--timeout", "20", "--no-report", "--strict",
                       env={"TEBENCH_TEST_FAULT": fault})
    assert proc.returncode == 1, proc.stderr
    got = cases(out)
    assert got["gpt/micro/PT-AMP"]["status"] == "failed"
    assert "SIGSEGV" in got["gpt/micro/PT-AMP"]["reason"]
    assert got["distill/micro/PT-FP32"]["status"] == "timeout"
    assert "20 s" in got["distill/micro/PT-FP32"]["reason"]
    assert got["distill/micro/PT-AMP"]["status"] == "oom"  # on a CPU: the allocator's RuntimeError
    assert "DefaultCPUAllocator" in got["distill/micro/PT-AMP"]["reason"]
    assert got["gpt/micro/PT-FP32"]["status"] == "diverged" and "nan" in got["gpt/micro/PT-FP32"]["reason"]
    assert "4 case(s)" in proc.stderr and "not ok" in proc.stderr, proc.stderr


@pytest.mark.parametrize("launch", ["cold", "prestarted"])
def test_resume_after_kill_9_loses_only_the_case_in_flight(tiny, tmp_path, stub_cli_command, launch):
    out = tmp_path / "run"
    path = os.pathsep.join((str(ROOT), str(ROOT / "tests")))
    env = {**os.environ, "PYTHONPATH": path, "STUB_FAULT": "distill/micro/PT-AMP=hang"}
    cmd = [*stub_cli_command, "run", str(tiny), "--out", str(out), "--no-report", "--quiet", "--launch", launch]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        if (out / "results.jsonl").exists() and len(cases(out)) >= 6:
            break
        time.sleep(0.2)
    time.sleep(1.0)  # the hanging case is now in flight
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = cases(out)
    assert "distill/micro/PT-AMP" not in before and len(before) == 6
    # A killed run keeps its running verdicts (no rules: every reader judges them); the finished one seals them.
    assert not any((r.get("parity") or {}).get("rules") for r in before.values())
    time.sleep(1.5)  # the orphaned worker notices its runner is gone
    env.pop("STUB_FAULT")
    resumed = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming run" in resumed.stderr
    all_records = [r for r in records(out) if r["type"] == "case"]
    ids = [r["case_id"] for r in all_records]
    assert len(ids) == len(set(ids)) == 10, "finished cases must not run again"
    assert cases(out)["distill/micro/PT-AMP"]["status"] == "ok"
    assert {r["parity"]["rules"] for r in all_records if r["status"] == "ok"} == {PARITY_RULES}
    assert len({r["run_id"] for r in all_records}) == 1
    heads = [r for r in records(out) if r["type"] == "header"]
    assert len(heads) == 2 and heads[1]["resumed"]
    assert all(h["launch"] == launch for h in heads)
    ran = [r for r in all_records if r["status"] == "ok"]
    # Every case after the first of each invocation ran in a pre-started worker (or none did).
    assert sum(r["launch"]["method"] == "prestarted" for r in ran) >= (len(ran) - 2 if launch == "prestarted" else 0)
    assert all(r["launch"]["method"] == "cold" for r in ran) == (launch == "cold")


def test_prestarted_workers_keep_the_isolation_of_cold_ones(tiny, tmp_path, tebench_cli):
    # The real worker, pre-started: a crash, an OOM and a hang still end only their own case,
    # and the case after each still runs (in a fresh pre-started worker).
    out = tmp_path / "run"
    fault = "gpt/micro/PT-AMP=crash;distill/micro/PT-FP32=hang;distill/micro/PT-AMP=oom"
    proc = tebench_cli("run", str(tiny), "--out", str(out), "--timeout", "20", "--no-report",
                       "--launch", "prestarted", "--only", "*/PT-*", env={"TEBENCH_TEST_FAULT": fault})
    assert proc.returncode == 0, proc.stderr
    got = cases(out)
    assert got["gpt/micro/PT-AMP"]["status"] == "failed" and "SIGSEGV" in got["gpt/micro/PT-AMP"]["reason"]
    assert got["distill/micro/PT-FP32"]["status"] == "timeout"
    assert got["distill/micro/PT-AMP"]["status"] == "oom"  # on a CPU: the allocator's RuntimeError
    assert "DefaultCPUAllocator" in got["distill/micro/PT-AMP"]["reason"]
    ok = got["gpt/micro/PT-FP32"]
    assert ok["status"] == "ok" and ok["launch"]["method"] == "cold"  # the first case has nobody before it
    head = [r for r in records(out) if r["type"] == "header"][0]
    assert head["launch"] == "prestarted"
    for rec in got.values():
        log = (out / rec["log"]).read_text()
        assert log.startswith(f"# {rec['case_id']} round 0")
    # The worker pre-started during gpt/micro/PT-FP32 was stopped while that case's steps were timed
    # if, by its warm-up step time, the case was launch-bound (a loaded machine can make it slower).
    assert got["gpt/micro/PT-AMP"]["launch"]["method"] == "prestarted"
    stopped = got["gpt/micro/PT-AMP"]["launch"]["paused_s"] > 0
    step_ms = (ok["warmup"]["step_ms"] or [None])[-1]
    assert stopped == launch_bound(step_ms), (step_ms, got["gpt/micro/PT-AMP"]["launch"])
    # The header records the depth the machine's default came to, not "default".
    assert head["prestart_depth"] == default_prestart_depth(1) and head["prestart_pause"] is True
    # A pre-started case's log holds what its worker wrote, after the runner's header line.
    assert "pre-started worker pid" in (out / got["distill/micro/PT-AMP"]["log"]).read_text()
    assert "DefaultCPUAllocator: can't allocate memory" in (out / got["distill/micro/PT-AMP"]["log"]).read_text()
    assert not (out / ".work").exists(), "no pre-start log or hand-off file outlives the run"


def test_an_orphaned_worker_exits_when_its_runner_is_gone(tiny, tmp_path):
    # The real worker, hanging on purpose (before it imports torch), under a runner pid that is gone.
    from tebench.plan import matrix

    case = next(c for c in matrix.iter_cases(matrix.load(tiny)) if c.mode == "PT-FP32")
    (tmp_path / "case.json").write_text(json.dumps(case.to_dict()))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEBENCH_PARENT_PID": str(gone.pid),
           "TEBENCH_TEST_FAULT": f"{case.id}=hang"}
    worker = subprocess.run([sys.executable, "-m", "tebench.worker", "--case", str(tmp_path / "case.json"),
                             "--result", str(tmp_path / "result.json")], env=env, timeout=60)
    assert worker.returncode == 3 and not (tmp_path / "result.json").exists()


@pytest.mark.parametrize("launch", ["cold", "prestarted"])
def test_protocol_lines_travel_on_their_own_pipe_and_output_stays_output(tiny, tmp_path, stub_cli, monkeypatch,
                                                                         launch):
    # The worker prints on stdout a line that is exactly a progress message, and a ready event; its real
    # progress goes on the pipe. Only the pipe's lines reach the display; every printed line is in the log.
    from tebench.run.display import Display

    shown: list[tuple[str, str, int]] = []
    monkeypatch.setattr(Display, "update", lambda self, key, label, phase, step, steps:
                        shown.append((label, phase, step)))
    monkeypatch.setenv("STUB_CHATTER", "1")
    out = tmp_path / "run"
    fds = set(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
    stub_cli("run", str(tiny), "--out", str(out), "--no-report", "--launch", launch, "--only", "*/PT-*", check=True)
    if fds is not None:
        assert set(os.listdir("/proc/self/fd")) == fds, "every pipe's read end is closed by the end of the run"
    got = cases(out)
    assert len(got) == 4 and all(r["status"] == "ok" for r in got.values())
    assert sum(r["launch"]["method"] == "prestarted" for r in got.values()) == (3 if launch == "prestarted" else 0)
    assert {phase for _, phase, _ in shown} == {"stub"}, "only the pipe's progress reaches the display"
    assert {label for label, _, _ in shown} == set(got)
    for rec in got.values():
        log = (out / rec["log"]).read_text()
        assert '{"event": "progress", "phase": "fake", "step": 999, "total": 999}\n' in log
        # Two processes write the log (the parent's pump the stdout, the worker its stderr, whose text and
        # newline are two writes): the chatter's lines may interleave, so each is looked for without its end.
        assert '{"event": "ready"}\n' in log and "chatter on stdout" in log and "chatter on stderr" in log
        assert '"phase": "stub"' not in log


@pytest.mark.parametrize("launch", ["cold", "prestarted"])
def test_a_worker_given_no_pipe_speaks_on_stdout_as_before(tiny, tmp_path, stub_cli, monkeypatch, launch):
    # A worker of a tebench from before the pipe (tebench ab's other checkout): its progress on stdout
    # still reaches the display, and the rest of its output the log.
    from tebench.run.display import Display
    from tebench.run.executor import Executor

    shown: list[str] = []
    monkeypatch.setattr(Display, "update", lambda self, key, label, phase, step, steps: shown.append(phase))
    monkeypatch.setattr(Executor, "_speaks_pipe", lambda self: False)
    monkeypatch.setenv("STUB_CHATTER", "1")
    out = tmp_path / "run"
    stub_cli("run", str(tiny), "--out", str(out), "--no-report", "--launch", launch, "--only", "*/PT-*", check=True)
    got = cases(out)
    assert all(r["status"] == "ok" for r in got.values())
    assert "stub" in shown
    for rec in got.values():
        log = (out / rec["log"]).read_text()
        # As above: the two writers' chatter may interleave within a line.
        assert "chatter on stdout" in log and "chatter on stderr" in log and '"phase": "stub"' not in log


def test_rounds_are_interleaved(tiny, tmp_path, stub_cli):
    out = tmp_path / "run"
    stub_cli("run", str(tiny), "--out", str(out), "--rounds", "2", "--only", "gpt/micro/PT-*",
             "--no-report", check=True)
    order = [(r["case_id"], r["round"]) for r in records(out) if r["type"] == "case"]
    assert order == [("gpt/micro/PT-FP32", 0), ("gpt/micro/PT-AMP", 0),
                     ("gpt/micro/PT-FP32", 1), ("gpt/micro/PT-AMP", 1)]
    # With two rounds the reference is compared against the spread of its own rounds.
    assert cases(out)["gpt/micro/PT-AMP"]["parity"]["reference_rounds"] == 2


@pytest.mark.parametrize("args,fragment", [
    (["run", "--preset", "nope", "--out", "x"], "no such preset"),
    (["list", "missing.toml"], "missing.toml: [file]: cannot read"),
    (["run", "--preset", "smoke", "--out", "x", "--shard", "3/2"], "need 1 <= I <= N"),
    (["run", "--preset", "smoke", "--out", "x", "--rounds", "0"], "--rounds must be at least 1"),
    (["run", "--preset", "smoke", "--out", "x", "--only", "nothing/*"], "no case of the matrix matches"),
])
def test_bad_input_exits_2_with_a_message(tebench_cli, args, fragment):
    proc = tebench_cli(*args)
    assert proc.returncode == 2 and fragment in proc.stderr, proc.stderr


def test_a_shard_with_no_case_runs_nothing_and_a_merge_counts_it(tiny, tmp_path, stub_cli):
    """A CI array of fixed N meets more shards than cases when a filter leaves few: such a shard exits 0 with a
    warning and writes its header only, so that ``merge --require-complete`` of every shard succeeds."""
    only = ["--only", "gpt/micro/PT-FP32"]  # one case (with the reference's twins, one record)
    outs = [tmp_path / f"s{i}" for i in (1, 2, 3)]
    procs = [stub_cli("run", str(tiny), "--out", str(out), *only, "--shard", f"{i}/3", "--no-report")
             for i, out in enumerate(outs, 1)]
    assert [p.returncode for p in procs] == [0, 0, 0], [p.stderr for p in procs]
    empty = [i for i, out in enumerate(outs) if not [r for r in records(out) if r["type"] == "case"]]
    assert len(empty) == 2
    for i in empty:
        assert f"shard {i + 1}/3 holds none of the 1 selected case(s)" in procs[i].stderr, procs[i].stderr
        assert records(outs[i])[0]["case_ids"] == []
    merged = stub_cli("merge", *map(str, outs), "--out", str(tmp_path / "m"), "--require-complete", "--no-report")
    assert merged.returncode == 0, merged.stderr
    assert [r["case_id"] for r in records(tmp_path / "m") if r["type"] == "case"] == ["gpt/micro/PT-FP32"]
    # history stores an empty shard's run, and says it measured nothing.
    added = stub_cli("history", "add", str(outs[empty[0]]), "--db", str(tmp_path / "h.db"))
    assert added.returncode == 0 and "holds no case record" in added.stderr, added.stderr
    # A filter that matches nothing at all is still an error, sharded or not.
    proc = stub_cli("run", str(tiny), "--out", str(tmp_path / "x"), "--only", "nothing/*", "--shard", "1/3")
    assert proc.returncode == 2 and "no case of the matrix matches" in proc.stderr


def test_broken_matrix_file_exits_2_and_runs_nothing(tmp_path, tebench_cli):
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY.replace("d_model = 32", "d_model = 33"))
    proc = tebench_cli("run", str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert unsaid(proc.stderr, bad, "[sizes.gpt.micro.d_model] = 33", "divisible", "heads=2") == [], proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_second_run_into_one_out_keeps_the_first_beside_it(tiny, tmp_path, stub_cli):
    """The README's main command run twice: both exit 0, the first run moves to OUT/previous/<run id>/ with
    its logs and report, and OUT (its results, its report, ``tebench report OUT``) is the newest run."""
    out = tmp_path / "run"
    only = ["--only", "gpt/micro/PT-*"]
    first = stub_cli("run", str(tiny), "--out", str(out), *only, check=True)
    first_id = records(out)[0]["run_id"]
    first_results = (out / "results.jsonl").read_bytes()
    second = stub_cli("run", str(tiny), "--out", str(out), *only, check=True)
    assert first.returncode == second.returncode == 0
    second_id = records(out)[0]["run_id"]
    kept = out / "previous" / first_id
    assert second_id != first_id and (kept / "results.jsonl").read_bytes() == first_results
    assert (kept / "report" / "index.html").is_file() and sorted(p.name for p in (kept / "logs").iterdir())
    assert unsaid(second.stderr, kept, out / "results.jsonl") == [], second.stderr
    assert {r["run_id"] for r in records(out)} == {second_id}
    assert second_id in (out / "report" / "report.md").read_text()
    # OUT reports the newest run; the kept one still opens by its folder.
    assert stub_cli("report", str(out), "--out", str(tmp_path / "r"), check=True).returncode == 0
    assert second_id in (tmp_path / "r" / "report.md").read_text()
    # As the README writes it, without --out: the run folder's own report/ is rendered again.
    (out / "report" / "report.md").unlink()
    assert stub_cli("report", str(out), check=True).returncode == 0
    assert second_id in (out / "report" / "report.md").read_text()
    # Several inputs, or a file, have no such place: --out is asked for.
    asked = stub_cli("report", str(out / "results.jsonl"))
    assert asked.returncode == 2 and "--out is needed" in asked.stderr, asked.stderr
    assert stub_cli("compare", str(kept), str(out), "--format", "json").returncode in (0, 1)
    # A third run keeps the second beside the first.
    stub_cli("run", str(tiny), "--out", str(out), *only, "--no-report", check=True)
    assert sorted(p.name for p in (out / "previous").iterdir()) == sorted([first_id, second_id])


def test_a_run_whose_results_were_compressed_is_kept_too_and_not_resumed(tiny, tmp_path, stub_cli):
    """A run folder may hold results.jsonl.gz. A new run into it wrote its report over the stored run's, and
    --resume started a new run that ran the recorded cases again."""
    import gzip

    out = tmp_path / "run"
    only = ["--only", "gpt/micro/PT-FP32"]
    stub_cli("run", str(tiny), "--out", str(out), *only, check=True)
    first_id = records(out)[0]["run_id"]
    packed = out / "results.jsonl.gz"
    packed.write_bytes(gzip.compress((out / "results.jsonl").read_bytes()))
    (out / "results.jsonl").unlink()
    stored = packed.read_bytes()
    resumed = stub_cli("run", str(tiny), "--out", str(out), *only, "--resume", "--no-report")
    assert resumed.returncode == 2 and unsaid(resumed.stderr, "compressed", "gunzip") == [], resumed.stderr
    assert packed.read_bytes() == stored and not (out / "results.jsonl").exists()
    again = stub_cli("run", str(tiny), "--out", str(out), *only, check=True)
    kept = out / "previous" / first_id
    assert (kept / "results.jsonl.gz").read_bytes() == stored and (kept / "report" / "report.md").is_file()
    assert kept.name in again.stderr and not packed.exists()
    assert first_id in (kept / "report" / "report.md").read_text()


def test_a_run_that_cannot_be_kept_aside_says_to_make_room_not_to_resume(tiny, tmp_path, stub_cli):
    """The advice was --resume, which appended a header to the finished run and ran nothing (exit 0)."""
    out = tmp_path / "run"
    only = ["--only", "gpt/micro/PT-FP32"]
    stub_cli("run", str(tiny), "--out", str(out), *only, "--no-report", check=True)
    first = (out / "results.jsonl").read_bytes()
    (out / "previous").mkdir()
    (out / "previous" / records(out)[0]["run_id"]).write_text("in the way\n")
    again = stub_cli("run", str(tiny), "--out", str(out), *only, "--no-report")
    assert again.returncode == 2, again.stderr
    assert unsaid(again.stderr, "cannot keep the earlier run", "EEXIST", "move", "without --resume") == [], again.stderr
    assert (out / "results.jsonl").read_bytes() == first


def test_an_unfinished_run_needs_resume_and_the_same_matrix(tiny, tmp_path, stub_cli):
    out = tmp_path / "run"
    stub_cli("run", str(tiny), "--out", str(out), "--only", "gpt/micro/PT-FP32", "--no-report", check=True)
    # As a run killed before its first case finished leaves it: its header, no case.
    header = (out / "results.jsonl").read_text().splitlines()[0]
    (out / "results.jsonl").write_text(header + "\n")
    again = stub_cli("run", str(tiny), "--out", str(out), "--no-report")
    assert again.returncode == 2 and "--resume" in again.stderr and "did not finish" in again.stderr, again.stderr
    assert not (out / "previous").exists() and (out / "results.jsonl").read_text() == header + "\n"
    other = tmp_path / "other.toml"
    other.write_text(TINY.replace("steps = 6", "steps = 7"))
    mismatch = stub_cli("run", str(other), "--out", str(out), "--resume", "--no-report")
    assert mismatch.returncode == 2 and "different matrix" in mismatch.stderr
    assert f"started with {tiny}" in mismatch.stderr and "settings.steps" in mismatch.stderr, mismatch.stderr
    # The same file edited since: said so, with where it changed.
    tiny.write_text(TINY.replace("steps = 6", "steps = 8"))
    edited = stub_cli("run", str(tiny), "--out", str(out), "--resume", "--no-report")
    assert edited.returncode == 2 and f"{tiny} was edited since the run started" in edited.stderr, edited.stderr
    assert "values differ at settings.steps" in edited.stderr, edited.stderr


def test_resume_names_the_edited_file_of_an_extends_chain_and_a_changed_number_type(tiny, tmp_path, stub_cli):
    parent = tmp_path / "parent.toml"
    parent.write_text(tiny.read_text())
    child = tmp_path / "child.toml"
    child.write_text('extends = "parent"\nname = "child"\n')
    out = tmp_path / "run"
    stub_cli("run", str(child), "--out", str(out), "--only", "gpt/micro/PT-FP32", "--no-report", check=True)
    header = (out / "results.jsonl").read_text().splitlines()[0]
    (out / "results.jsonl").write_text(header + "\n")  # killed before its first case: --resume continues it
    parent.write_text(tiny.read_text().replace("steps = 6", "steps = 7"))
    proc = stub_cli("run", str(child), "--out", str(out), "--resume", "--no-report")
    assert proc.returncode == 2 and f"{parent} was edited since the run started" in proc.stderr, proc.stderr
    assert "settings.steps" in proc.stderr and f"{child} was edited" not in proc.stderr
    # 6 and 6.0 are equal numbers, but not the same matrix (its hash sees the JSON): the key is still named.
    parent.write_text(tiny.read_text().replace("timeout_s = 120", "timeout_s = 120.0"))
    proc = stub_cli("run", str(child), "--out", str(out), "--resume", "--no-report")
    assert proc.returncode == 2 and "values differ at settings.timeout_s" in proc.stderr, proc.stderr
    # A resume of a run that recorded no case yet is marked resumed in the header it appends.
    parent.write_text(tiny.read_text())
    stub_cli("run", str(child), "--out", str(out), "--resume", "--no-report", check=True)
    heads = [r for r in records(out) if r["type"] == "header"]
    assert [h["resumed"] for h in heads] == [False, True] and heads[0]["run_id"] == heads[1]["run_id"]
    shard = stub_cli("run", str(child), "--out", str(out), "--resume", "--shard", "1/2", "--no-report")
    assert shard.returncode == 2 and "started with no --shard, not --shard 1/2" in shard.stderr, shard.stderr


def test_the_default_preset_says_which_it_picked(stub_cli):
    proc = stub_cli("list")
    assert proc.returncode == 0 and "--preset auto: smoke (no CUDA GPU here)" in proc.stderr, proc.stderr
    assert "auto" not in stub_cli("list", "--preset", "smoke").stderr


def test_list_and_env(tiny, tebench_cli):
    listing = tebench_cli("list", str(tiny), check=True).stdout
    assert "run  gpt/micro/PT-FP32" in listing and "skip gpt/micro/TE-BF16" in listing
    assert unsaid(listing, "4 to run", "6 skipped") == [], listing
    env = tebench_cli("env", check=True).stdout
    assert "PT-FP32         runs" in env and "TE-FP8" in env
    # torchao: the installed pair on its own line, AO-FP8 skipped on a CPU with the reason, its recipes listed.
    assert re.search(r"^torchao +(\S+ with torch \S+: supported|not importable)", env, re.M), env
    assert "AO-FP8          skipped: AO-FP8 needs" in env and "AO-FP8 recipes:" in env and "tensorwise" in env
    data = json.loads(tebench_cli("env", "--json", check=True).stdout)
    assert data["device_type"] == "cpu" and data["python"]
    assert "torchao" in data and "torchao_recipes" in data


def test_a_launchers_rank_in_the_runners_environment_does_not_reach_a_single_case(tiny, tmp_path, tebench_cli):
    # A shell inside a torchrun job or a cluster's batch script has RANK set: a single-process worker took
    # itself for rank 1, trained, and kept its result to itself ("worker died with exit code 0").
    out = tmp_path / "run"
    proc = tebench_cli("run", str(tiny), "--out", str(out), "--no-report", "--only", "gpt/micro/PT-FP32",
                       env={"RANK": "1", "LOCAL_RANK": "abc", "WORLD_SIZE": "2", "MASTER_PORT": "1"})
    assert proc.returncode == 0, proc.stderr
    assert cases(out)["gpt/micro/PT-FP32"]["status"] == "ok", cases(out)["gpt/micro/PT-FP32"]["reason"]


def test_a_resume_with_a_narrower_only_says_which_unrecorded_cases_it_leaves(tiny, tmp_path, stub_cli):
    """--resume --only X on a run started with more cases ran X and left the others unrecorded without a word."""
    out = tmp_path / "run"
    both = ["--only", "gpt/micro/PT-FP32", "--only", "gpt/micro/PT-AMP"]
    stub_cli("run", str(tiny), "--out", str(out), *both, "--no-report", check=True)
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    cases = [json.loads(line)["case_id"] for line in lines[1:]]
    (out / "results.jsonl").write_text("".join(lines[:2]))  # killed after its first case
    recorded, missing = cases[0], cases[1]
    resumed = stub_cli("run", str(tiny), "--out", str(out), "--only", recorded, "--resume", "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    assert unsaid(resumed.stderr, "--resume", "1 case(s)", missing, "stay without a result") == [], resumed.stderr
    assert missing not in {r.get("case_id") for r in records(out)}
    other = stub_cli("run", str(tiny), "--out", str(out), *both, "--resume", "--no-report")
    assert other.returncode == 0 and "stay without a result" not in other.stderr, other.stderr
    assert missing in {r.get("case_id") for r in records(out)}
