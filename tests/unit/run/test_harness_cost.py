"""What the harness itself costs: adaptive warm-up, compile caches, pre-started workers.

The timing effects are measured on a GPU (README, "What the harness costs");
these tests pin the logic: when the warm-up stops, that the case still trains
every step, which cache variables a case gets, and that a pre-started worker
is only ever used for a case it can run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from conftest import MICRO_GPT
from helpers.executors import build_executor
from tebench.run import caches, options, prestart
from tebench.worker import case as measure, timing
from tebench.schema.environment import Environment
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.run.prestart import default_prestart_depth


@pytest.mark.parametrize("step_ms, floor, expected", [
    ([5000.0], 2, False),                      # one step is never enough
    ([5000.0, 100.0], 2, False),               # the compile step against a steady one
    ([5000.0, 100.0, 105.0], 2, True),         # two steps within 10%
    ([5000.0, 100.0, 111.0], 2, False),        # 11% apart
    ([100.0, 101.0], 2, True),                 # no transient at all
    ([100.0, 101.0, 100.0], 4, False),         # the floor is not reached yet
])
def test_settled(step_ms, floor, expected):
    assert timing.settled(step_ms, floor, 0.10) is expected


class _Trainer:
    """Steps whose duration follows a script (seconds), returning a loss tensor."""

    def __init__(self, durations: list[float], clock: list[float]):
        self.durations, self.clock, self.calls = durations, clock, 0

    def step(self, batch):
        self.clock[0] += self.durations[min(self.calls, len(self.durations) - 1)]
        self.calls += 1
        return torch.tensor(1.0)


def _run_warm_up(monkeypatch, durations, **settings):
    clock = [0.0]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    st = Settings(**settings)
    trainer = _Trainer(durations, clock)
    losses: list = []
    seen: list[int] = []
    out = timing.warm_up(trainer, [None] * 100, st, torch.device("cpu"), losses, seen.append)
    return out, losses, seen


def test_warm_up_stops_once_settled_and_the_rest_is_timed(monkeypatch):
    out, losses, seen = _run_warm_up(monkeypatch, [3.0, 0.2, 0.2, 0.2], warmup=6, warmup_floor=2)
    assert out["rule"] == "settled" and out["settled"] is True
    assert out["steps"] == 3 and len(losses) == 3 and seen == [0, 1, 2]
    assert out["step_ms"] == pytest.approx([3000.0, 200.0, 200.0])
    assert (out["floor"], out["ceiling"]) == (2, 6)


def test_warm_up_that_never_settles_stops_at_the_ceiling(monkeypatch):
    out, losses, _ = _run_warm_up(monkeypatch, [3.0, 0.2, 0.4, 0.2, 0.4], warmup=5)
    assert out["steps"] == 5 and out["settled"] is False and len(losses) == 5


def test_fixed_warm_up_runs_exactly_warmup_steps(monkeypatch):
    out, losses, _ = _run_warm_up(monkeypatch, [3.0, 0.2, 0.2, 0.2], warmup=4, warmup_rule="fixed")
    assert out["steps"] == 4 and out["settled"] is None and out["step_ms"] == []


def test_no_warm_up_at_all(monkeypatch):
    out, losses, _ = _run_warm_up(monkeypatch, [0.2], warmup=0)
    assert out["steps"] == 0 and out["settled"] is None and losses == []


def test_a_case_trains_every_step_whatever_the_warm_up(tmp_path):
    # The loss curve is judged step by step against the reference: an early end of the
    # warm-up must time more steps, never train fewer.
    from tebench.plan.matrix import iter_cases, load

    path = tmp_path / "m.toml"
    path.write_text('name = "m"\n[settings]\nsteps = 4\nwarmup = 5\nwarmup_floor = 1\nwarmup_rtol = 10.0\n'
                    '[axes]\nmodes = ["PT-FP32"]\n' + MICRO_GPT)
    case = next(iter_cases(load(path)))
    raw = measure.run_case(case, torch.device("cpu"), lambda *a: None)
    k = raw.warmup.steps
    assert 2 <= k <= 5  # floor 1, but two step times are compared; the ceiling is warmup
    assert raw.loss is not None and raw.timing is not None
    assert len(raw.loss.per_step) == 9
    assert len(raw.timing.samples_ms) == 9 - k
    assert raw.loss.warmup_steps == k


def test_compile_cache_variables_and_the_users_own_win(tmp_path):
    env = caches.child_env(tmp_path / "c", parent={"TRITON_CACHE_DIR": "/mine"})
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "c" / "inductor")
    assert env["CUDA_CACHE_PATH"] == str(tmp_path / "c" / "cuda-jit")
    assert "TRITON_CACHE_DIR" not in env
    assert env["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "1"
    assert caches.child_env(None) == {}


def test_compile_cache_state_is_cold_then_warm(tmp_path):
    d = tmp_path / "c"
    assert caches.describe(None) == {"dir": None, "state": "off"}
    assert caches.describe(d, parent={})["state"] == "cold"
    caches.prepare(d)
    assert caches.describe(d, parent={})["state"] == "cold"
    (d / "inductor").mkdir()
    (d / "inductor" / "entry").write_bytes(b"x" * 10)
    warm = caches.describe(d, parent={"TORCHINDUCTOR_CACHE_DIR": "/elsewhere"})
    assert (warm["state"], warm["files"], warm["bytes"]) == ("warm", 1, 10)
    assert warm["overridden_by_env"] == ["TORCHINDUCTOR_CACHE_DIR"]


def test_launch_auto_is_prestarted_only_on_cuda():
    assert options.launch_method("auto", Environment(device_type="cuda")) == "prestarted"
    assert options.launch_method("auto", Environment(device_type="cpu")) == "cold"
    assert options.launch_method("cold", Environment(device_type="cuda")) == "cold"


def _read_end() -> int:
    """A protocol pipe's read end, as a pre-started worker's Spare holds it (its writer already gone)."""
    read, write = os.pipe()
    os.close(write)
    return read


def _case_stub(mode: str, parallel: str = "single"):
    return SimpleNamespace(mode=mode, parallel=parallel)


@pytest.mark.parametrize("preloaded, mode, parallel, used", [
    ("torch", "PT-AMP", "single", True),
    ("torch", "TE-BF16", "single", True),    # TE is imported after the case arrives, as cold
    ("te", "TE-FP8", "single", True),
    ("te", "PT-AMP", "single", False),       # a PyTorch case never runs with TE loaded
    ("torch", "PT-AMP", "ddp", False),       # torchrun cases start cold (the spare waits)
])
def test_a_prestarted_worker_runs_only_a_case_it_fits(tmp_path, preloaded, mode, parallel, used):
    ex = build_executor(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.PIPE,
                            text=True, start_new_session=True)
    log = tmp_path / "prestart.log"
    log.write_text("")
    ex.spares = {"0": [prestart.Spare(proc, preloaded, log, _read_end())]}
    got = ex._take_spare(_case_stub(mode, parallel), "0")
    try:
        assert (got is not None) is used
        # A torchrun case leaves the spare for the next single-process case.
        assert ex.spares == {"0": []} or (parallel != "single" and len(ex.spares["0"]) == 1)
        assert (proc.poll() is None) is (used or parallel != "single"), "an unusable pre-started worker is ended"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_dead_prestarted_worker_is_not_used(tmp_path):
    ex = build_executor(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(2)"], stdin=subprocess.PIPE, text=True)
    proc.wait()
    log = tmp_path / "prestart.log"
    log.write_text("boom")
    ex.spares = {None: [prestart.Spare(proc, "torch", log, _read_end())]}
    assert ex._take_spare(_case_stub("PT-FP32"), None) is None
    assert not log.exists()


def test_prestart_keeps_the_next_cases_workers_started_up_to_the_depth(tmp_path):
    ex = build_executor(tmp_path, options.RunOptions(out=tmp_path, prestart_depth=2, launch="prestarted"))
    started: list[str] = []

    def spawn(case, device):
        started.append(case.mode)
        ex.spares.setdefault(device, []).append(case.mode)

    ex._spawn = spawn
    upcoming = [_case_stub("TE-FP8"), _case_stub("PT-AMP", "ddp"), _case_stub("PT-AMP"), _case_stub("TE-BF16")]
    ex._prestart(upcoming, "0")
    assert started == ["TE-FP8", "PT-AMP"]  # the torchrun case is passed over; two ahead
    ex.spares["0"].pop(0)  # the next case took its worker
    ex._prestart(upcoming[2:], "0")
    assert started == ["TE-FP8", "PT-AMP", "TE-BF16"]
    ex.launch = "cold"
    ex._prestart(upcoming, "1")
    assert "1" not in ex.spares


def test_upcoming_cases_skip_what_takes_no_worker():
    from tebench.plan.schedule import Planned

    planned = [Planned(_case_stub("PT-AMP"), 0, "no GPU"), Planned(_case_stub("TE-FP8", "fsdp2"), 0, None),
               Planned(_case_stub("TE-BF16"), 0, None)]
    assert [c.mode for c in prestart.upcoming_cases(planned)] == ["TE-BF16"]


class _Recorder:
    def __init__(self, with_data_seed: bool):
        self.calls: list = []
        if with_data_seed:
            self.batches = self._with

    def batches(self, size, count, seed, device):
        self.calls.append((seed, None))
        return []

    def _with(self, size, count, seed, device, data_seed=None):
        self.calls.append((seed, data_seed))
        return []


@pytest.mark.parametrize("with_data_seed, expected", [(True, (1234, 99)), (False, (99, None))])
def test_a_data_parallel_rank_draws_its_own_tokens_of_the_same_task(with_data_seed, expected):
    # Distillation seeds its teacher from the case's seed: a rank's seed must only change the tokens,
    # or each rank would learn a different teacher.
    case = Case(workload="gpt", size="t", mode="PT-FP32", settings=Settings(seed=1234),
                dims={"vocab": 96, "d_model": 32, "heads": 2, "layers": 2, "ffn": 64, "seq": 16, "batch": 4})
    wl = _Recorder(with_data_seed)
    measure.draw_batches(wl, case, 3, torch.device("cpu"), data_seed=99)
    measure.draw_batches(wl, case, 3, torch.device("cpu"))
    assert wl.calls[0] == expected
    assert wl.calls[1] == (1234, None)


def test_no_worker_is_pre_started_for_a_torchrun_device_group(tmp_path):
    ex = build_executor(tmp_path, options.RunOptions(out=tmp_path, prestart_depth=2, launch="prestarted"))
    ex._spawn = lambda case, device: pytest.fail("spawned a worker for a device group")
    ex._prestart([_case_stub("PT-AMP")], "0,1")


@pytest.mark.parametrize("args, fragment", [
    (["--compile-cache", "/proc/forbidden/x"], "--compile-cache /proc/forbidden/x: cannot create"),
    (["--prestart-depth", "0"], "--prestart-depth 0: expected 1 to 8"),
    (["--launch", "bogus"], "invalid choice: 'bogus'"),
    (["--launch", "cold", "--prestart-depth", "3"], "--prestart-depth 3 applies to pre-started workers"),
    (["--launch", "cold", "--no-pause"], "--no-pause applies to pre-started workers"),
    # Given explicitly, even the depth the machine would have chosen is refused with cold starts.
    (["--launch", "cold", "--prestart-depth", str(default_prestart_depth(1))], "applies to pre-started workers"),
])
@pytest.mark.parametrize("command", ["run", "ab"])
def test_bad_cost_options_are_refused_before_anything_runs(tmp_path, tebench_cli, command, args, fragment):
    out = tmp_path / "out"
    proc = tebench_cli(command, "--preset", "smoke", "--out", str(out), *args)
    assert proc.returncode == 2 and fragment in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists(), "nothing is created for a bad option"


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_pre_started_workers_are_stopped_while_a_case_is_timed(tmp_path):
    ex = build_executor(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.PIPE, text=True)
    try:
        spare = prestart.Spare(proc, "torch", tmp_path / "log", None)
        ex.spares = {"0": [spare]}
        ex.pause_spares("0", True)
        deadline = time.time() + 10
        while _state(proc.pid) != "T" and time.time() < deadline:
            time.sleep(0.01)
        assert _state(proc.pid) == "T"
        ex.pause_spares("0", True)  # already stopped: nothing changes
        ex.pause_spares("1", False)  # another device's workers are not touched
        assert _state(proc.pid) == "T"
        ex.pause_spares("0", False)
        deadline = time.time() + 10
        while _state(proc.pid) == "T" and time.time() < deadline:
            time.sleep(0.01)
        assert _state(proc.pid) != "T" and spare.stopped_at is None and spare.paused_s > 0
        # A stopped worker handed a case is continued first.
        ex.pause_spares("0", True)
        assert ex._take_spare(_case_stub("PT-AMP"), "0") is spare and spare.stopped_at is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_no_pause_leaves_pre_started_workers_running(tmp_path):
    ex = build_executor(tmp_path, options.RunOptions(out=tmp_path, pause=False))
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.PIPE, text=True)
    try:
        spare = prestart.Spare(proc, "torch", tmp_path / "log", None)
        ex.spares = {"0": [spare]}
        ex.pause_spares("0", True)
        time.sleep(0.2)  # a SIGSTOP, had one been sent, is delivered long before this
        assert _state(proc.pid) != "T" and spare.stopped_at is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("step_ms, stopped", [(None, True), (5.0, True), (49.9, True), (50.0, False), (300.0, False)])
def test_workers_are_stopped_only_beside_launch_bound_timed_steps(step_ms, stopped):
    assert prestart.launch_bound(step_ms) is stopped


def test_the_measure_announcement_carries_the_warm_up_step_time(capsys):
    from tebench.worker.main import _Progress

    progress = _Progress(True)
    progress("warmup", 1, 10)
    progress("measure", 3, 10, 12.5)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert "step_ms" not in lines[0] and lines[1]["phase"] == "measure" and lines[1]["step_ms"] == 12.5


@pytest.mark.parametrize("cpus, devices, depth", [
    (16, 1, 4),   # the H200 host the rule was measured on
    (2, 1, 1),    # a small CI machine: one worker, so imports do not crowd the timed case
    (8, 1, 2),
    (7, 1, 1),
    (128, 1, 4),  # capped: more workers only hold memory for cases far ahead
    (32, 2, 4),
    (32, 8, 1),   # eight GPUs share the host's CPUs
    (1, 4, 1),
])
def test_default_prestart_depth_is_one_worker_per_four_cpus_per_device(cpus, devices, depth):
    assert default_prestart_depth(devices, cpus=cpus) == depth


def test_run_options_leave_the_depth_to_the_machine_until_resolved(tmp_path):
    opts = options.RunOptions(out=tmp_path, devices=["0", "1"])
    assert opts.prestart_depth is None
    assert options.resolve_options(opts).prestart_depth == default_prestart_depth(2)
    given = options.RunOptions(out=tmp_path, prestart_depth=3)
    assert options.resolve_options(given) is given


@pytest.mark.parametrize("text, cap", [
    ("400000 100000\n", 4),   # a container limited to 4 CPUs
    ("150000 100000\n", 1),   # 1.5 CPUs: whole CPUs only
    ("max 100000\n", None),   # no quota: the affinity alone
    ("garbage\n", None),      # unreadable: the affinity alone
])
def test_usable_cpus_respect_a_cgroup_quota(tmp_path, text, cap):
    import os

    from tebench.cpus import usable_cpus

    affinity = len(os.sched_getaffinity(0))
    cpu_max = tmp_path / "cpu.max"
    cpu_max.write_text(text)
    assert usable_cpus(cpu_max) == (min(affinity, cap) if cap else affinity)
    assert usable_cpus(tmp_path / "missing") == affinity
