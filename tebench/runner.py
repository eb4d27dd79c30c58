"""The runner: expand, gate, run each case in its own process, record as it goes.

The parent process never imports CUDA state. Each case runs in a child
(``python -m tebench.worker``, or torchrun for distributed cases) with a
wall-clock limit; a crash, an OOM or a hang ends that child only, is recorded
with its reason, and the matrix goes on. Every finished case is appended to
``results.jsonl`` and fsync'd before the next starts, so a killed run loses at
most the cases in flight, and ``--resume`` picks up from there.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import tebench
from tebench import caches, parity, results, shard, stats
from tebench.detect import Environment
from tebench.errors import RunError, StorageError  # noqa: F401  (raised here, caught by the CLI)
from tebench.gates import gate_case
from tebench.matrix import Case, Matrix, expand, iter_cases, reference_order
from tebench.modes import MODES
from tebench.record import CaseResult, Throughput
from tebench.workloads import SPECS

# A worker that ran its case but could not write the result exits with
# EXIT_STORAGE: the runner then stops instead of recording the case as failed.
from tebench.worker import EXIT_STORAGE, default_prestart_depth

LOG_TAIL_LINES = 25


LOCK_NAME = ".lock"
MIN_FREE_BYTES = 1 << 20
"""Below this much free space in OUT, a worker that left no result is taken to have hit a full disk."""


def _storage_error(what: str, exc: OSError, out: Path) -> StorageError:
    reason = f"{errno.errorcode.get(exc.errno, 'OSError')} ({exc.strerror})" if exc.errno else str(exc)
    return StorageError(f"{what}: {reason}. Finished cases are kept in {out / results.RESULTS_NAME}; "
                        "fix the storage and continue with --resume")


def check_out_dir(out: Path) -> None:
    """StorageError unless ``out`` is (or can be created as) a directory."""
    if out.exists() and not out.is_dir():
        raise StorageError(f"--out {out}: is a file, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"--out {out}: cannot create the run directory: "
                           f"{errno.errorcode.get(exc.errno or 0, 'OSError')} ({exc.strerror or exc})") from None


@contextlib.contextmanager
def lock_out(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out`` (``out/.lock``, flock) for the duration of a run.

    A second writer is refused at once instead of interleaving its records
    with the first one's. The lock is the kernel's: it goes with the process,
    so a killed run never leaves OUT locked.
    """
    path = out / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _storage_error(f"cannot create the lock file {path}", exc, out) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
        os.close(fd)
        raise RunError(f"{out} is in use by another tebench run ({holder or 'holder unknown'}); "
                       "wait for it to finish or choose another --out") from None
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
                  .encode(), 0)
    try:
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race a waiting run)


def _out_of_space(directory: Path) -> bool:
    """Whether ``directory`` is full or unwritable now (a worker's missing result may be why)."""
    try:
        st = os.statvfs(directory)
        if st.f_bavail * st.f_frsize < MIN_FREE_BYTES:
            return True
        probe = directory / f".probe-{os.getpid()}"
        with probe.open("wb") as fh:
            fh.write(b"\0" * 4096)
            fh.flush()
            os.fsync(fh.fileno())
        probe.unlink()
        return False
    except OSError:
        return True


@dataclass
class RunOptions:
    """How ``tebench run`` executes a matrix."""

    out: Path
    rounds: int = 1
    resume: bool = False
    timeout_s: float | None = None
    """Overrides every case's ``timeout_s`` when set."""
    devices: list[str] | None = None
    """CUDA device indices to run on concurrently, one case per device."""
    shard: tuple[int, int] | None = None
    only: list[str] = field(default_factory=list)
    """Glob patterns on case ids; when given, only matching cases run."""
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment variables for every case's process (``tebench ab`` sets each side's)."""
    live: bool | None = None
    """Live progress line; None means 'when stderr is a terminal'."""
    command: list[str] = field(default_factory=list)
    compile_cache: Path | None = None
    """Directory of the compile caches every case shares (see :mod:`tebench.caches`); None: torch's defaults."""
    prestart_depth: int | None = None
    """With prestarted launches, how many upcoming cases per device have their worker started;
    None: :func:`tebench.worker.default_prestart_depth` for this host and these devices (see
    :func:`resolve_options`). On the H200 a worker's imports (torch, TE, torch.compile's
    machinery: 6-15 s) outlasted many a case (3-10 s): with one, the next case often waited for
    them (first step a median 1.9 s after the previous case ended); with two, 0.25-0.4 s
    (2026-11-30); on the nightly's stretches of short cases, cases waited a third to a half as
    long for imports with four workers as with two (2026-12-01, reports/h200-harness-cost/)."""
    pause: bool = True
    """With prestarted launches, stop (SIGSTOP) the waiting workers while a launch-bound case's
    timed steps run (see :data:`PAUSE_BELOW_MS`), so that their imports take no host CPU from it."""
    launch: str = "auto"
    """How a case's process starts: ``prestarted`` (its worker was started and did its imports
    while the previous case ran), ``cold`` (started when its turn comes), or ``auto``
    (prestarted on CUDA machines, cold on CPU-only ones, where the imports would share the
    cores with the case being timed)."""


# Below this warm-up step time a case is taken to be launch-bound: its timed steps pace on the host
# CPU, and pre-started workers are stopped while they run. H200, 2026-11-30, depth 2: launch-bound
# TE-BF16 cases of 5-23 ms a step had medians 10-35% higher with the workers importing beside them
# than stopped, while cases of 90-300 ms (d2048, d4096) matched cold starts within 0.7% with the
# workers running (reports/h200-harness-cost/).
PAUSE_BELOW_MS = 50.0


def launch_bound(step_ms: float | None) -> bool:
    """Whether a case whose warm-up steps took ``step_ms`` (None: unknown) is timed with workers stopped."""
    return step_ms is None or step_ms < PAUSE_BELOW_MS


def resolve_options(opts: RunOptions) -> RunOptions:
    """``opts`` with what was left to the machine decided: the pre-start depth, per device."""
    if opts.prestart_depth is not None:
        return opts
    return replace(opts, prestart_depth=default_prestart_depth(len(opts.devices or [None])))


def launch_method(requested: str, env: Environment) -> str:
    """The launch method ``requested`` resolves to on this machine."""
    if requested == "auto":
        return "prestarted" if env.device_type == "cuda" else "cold"
    return requested


@dataclass(frozen=True)
class Planned:
    """A case in a given round, with the reason it will be skipped (if any)."""

    case: Case
    round: int
    skip: str | None


def select_cases(matrix: Matrix, only: list[str] | None = None,
                 shard_spec: tuple[int, int] | None = None) -> list[Case]:
    """The matrix's cases in run order, filtered and sharded."""
    import fnmatch

    cases = reference_order(list(iter_cases(matrix)))
    if only:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.id, pat) for pat in only)]
    if shard_spec:
        cases = shard.select(cases, *shard_spec)
    return cases


def plan(cases: list[Case], env: Environment, rounds: int) -> list[Planned]:
    """Rounds interleaved (all cases of round 0, then round 1, ...), as asv does,
    so slow drift of the machine spreads over every mode instead of biasing one."""
    gates = {c.id: gate_case(c, env) for c in cases}
    return [Planned(c, r, gates[c.id]) for r in range(rounds) for c in cases]


def slug(case_id: str) -> str:
    """A file-name-safe form of a case id."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", case_id.replace("/", "__"))


class Display:
    """Progress on stderr: a live line on a terminal, one line per finished case always."""

    def __init__(self, total: int, live: bool | None, stream=None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.total = total
        self.done = 0
        self.lock = threading.Lock()
        self.started: dict[str, float] = {}

    def _clear(self) -> None:
        if self.live:
            self.stream.write("\r\033[K")

    def update(self, key: str, label: str, phase: str, step: int, steps: int) -> None:
        if not self.live:
            return
        with self.lock:
            elapsed = time.monotonic() - self.started.get(key, time.monotonic())
            eta = ""
            if phase in ("warmup", "measure") and step > 0:
                eta = f" ETA {elapsed / step * (steps - step):.0f}s"
            self._clear()
            self.stream.write(f"[{self.done + 1}/{self.total}] {label} {phase} {step}/{steps}{eta}"[:160])
            self.stream.flush()

    def start(self, key: str) -> None:
        with self.lock:
            self.started[key] = time.monotonic()

    def finish(self, record: dict[str, Any]) -> None:
        with self.lock:
            self.done += 1
            self._clear()
            self.stream.write(f"[{self.done}/{self.total}] {summary_line(record)}\n")
            self.stream.flush()


def summary_line(record: dict[str, Any]) -> str:
    """One human-readable line for a finished case."""
    r = CaseResult.from_dict(record)
    head = f"{r.status:<8} {r.case_id}" + (f" (round {r.round})" if r.round else "")
    summary = r.summary
    if r.status in ("ok", "diverged") and summary.median is not None:
        tp = r.throughput or Throughput()
        bits = [f"{summary.median:.2f} ms/step (IQR {summary.iqr:.2f})"]
        if tp.tokens_per_s:
            bits.append(f"{tp.tokens_per_s:,.0f} tok/s")
        if tp.mfu is not None:
            bits.append(f"MFU {tp.mfu * 100:.1f}%")
        if r.verdict:
            bits.append(f"parity {r.verdict}")
        return f"{head}: " + ", ".join(bits)
    if r.reason:
        return f"{head}: {r.reason}"
    return head


def build_record(p: Planned, raw: dict[str, Any], env: Environment, run_id: str, started: float,
                 duration: float, log: str | None) -> dict[str, Any]:
    """A results record from a worker's raw measurements (or its failure)."""
    case = p.case
    record: dict[str, Any] = {
        "type": "case",
        "run_id": run_id,
        "case_id": case.id,
        "round": p.round,
        "case": case.to_dict(),
        "status": raw.get("status", "failed"),
        "reason": raw.get("reason"),
        "device": {"type": env.device_type, "name": env.device_name, **(raw.get("device") or {})},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": round(duration, 3),
        "log": log,
    }
    # `updates` (which parameter tensors training left unchanged) feeds parity's frozen-layer check.
    for key in ("memory", "loss", "validation", "gpu_busy", "fp8_state", "setup", "phases", "distributed",
                "warmup", "launch", "updates"):
        if raw.get(key) is not None:
            record[key] = raw[key]
    timing = raw.get("timing")
    if timing:
        summary = stats.summarize(timing["samples_ms"])
        record["timing"] = {**timing, "stats": summary}
        wl = SPECS[case.workload]
        size = case.size_spec
        tokens = wl.tokens_per_step(size) * case.nproc
        flops = wl.flops_per_step(size) * case.nproc
        if summary.get("median"):
            record["throughput"] = stats.throughput(summary["median"], tokens, flops, env.peak_tflops, case.nproc)
    if record["status"] == "ok" and raw.get("loss"):
        why = parity.divergence(raw["loss"]["per_step"])
        if why:
            record["status"], record["reason"] = "diverged", why
    if raw.get("loss"):
        losses = raw["loss"]["per_step"]
        record["loss"]["first"] = losses[0] if losses else None
        record["loss"]["final"] = parity.final_loss(losses)
    return record


def _pythonpath() -> str:
    """Make the child import this very tebench, installed or not."""
    root = str(Path(tebench.__file__).resolve().parent.parent)
    current = os.environ.get("PYTHONPATH", "")
    return root if not current else f"{root}{os.pathsep}{current}"


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


@dataclass
class _Spare:
    """A pre-started worker: imports done (or under way), waiting for one case on stdin."""

    proc: subprocess.Popen
    family: str
    log: Path
    paused_s: float = 0.0
    """Seconds it spent stopped (SIGSTOP) while earlier cases' timed steps ran."""
    stopped_at: float | None = None

    def pause(self, stop: bool) -> None:
        """Stop (SIGSTOP) or continue (SIGCONT) the worker, keeping count of the time it was stopped."""
        if stop == (self.stopped_at is not None):
            return
        try:
            os.kill(self.proc.pid, signal.SIGSTOP if stop else signal.SIGCONT)
        except ProcessLookupError:
            return
        now = time.monotonic()
        if stop:
            self.stopped_at = now
        else:
            self.paused_s += now - self.stopped_at
            self.stopped_at = None


class Executor:
    """Runs planned cases in child processes and records each as it finishes (``tebench run`` drives
    it over a matrix; ``tebench ab`` interleaves two of them).

    With ``launch = prestarted``, while a case runs on a device the worker for the
    next case on that device is already started and importing torch (and TE when
    that case needs it): no GPU work, no CUDA context. It still runs exactly one
    case, so isolation, timeouts and --resume are those of a cold start.
    """

    def __init__(self, opts: RunOptions, env: Environment, run_id: str, writer: results.Writer,
                 records: list[dict[str, Any]], display: Display):
        self.opts, self.env, self.run_id = resolve_options(opts), env, run_id
        self.writer, self.records, self.display = writer, records, display
        self.lock = threading.Lock()
        self.children: set[subprocess.Popen] = set()
        self.launch = launch_method(opts.launch, env)
        self.spares: dict[str | None, list[_Spare]] = {}
        """Per device, the pre-started workers of its upcoming single-process cases, in order."""
        self.spawned = 0
        self.finished: dict[str | None, float] = {}
        """When the last case on each device was recorded: the hand-off time to the next one is kept."""
        self.work = opts.out / ".work"
        self.logs = opts.out / "logs"
        try:
            self.work.mkdir(parents=True, exist_ok=True)
            self.logs.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _storage_error(f"cannot create {self.work} and {self.logs}", exc, opts.out) from None

    def record(self, p: Planned, raw: dict[str, Any], started: float, log: str | None) -> dict[str, Any]:
        rec = build_record(p, raw, self.env, self.run_id, started, time.time() - started, log)
        with self.lock:
            if rec.get("loss") and rec["status"] in ("ok", "diverged"):
                rec["parity"] = parity.judge(self.records + [rec], rec)
            try:
                self.writer.append(rec)
            except OSError as exc:
                raise _storage_error(f"cannot record {rec['case_id']} in {self.writer.path}", exc,
                                     self.opts.out) from None
            self.records.append(rec)
        self.display.finish(rec)
        return rec

    def skip(self, p: Planned) -> dict[str, Any]:
        return self.record(p, {"status": "skipped", "reason": p.skip}, time.time(), None)

    def _command(self, case: Case, case_file: Path, result_file: Path) -> list[str]:
        worker = ["-m", "tebench.worker", "--case", str(case_file), "--result", str(result_file), "--progress"]
        if case.parallel == "single":
            return [self.opts.python, *worker]
        return [self.opts.python, "-m", "torch.distributed.run", "--standalone",
                f"--nproc-per-node={case.nproc}", *worker]

    def _child_env(self, device: str | None) -> dict[str, str]:
        child_env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": _pythonpath(),
                     "TEBENCH_PARENT_PID": str(os.getpid()),
                     **caches.child_env(self.opts.compile_cache, {**os.environ, **self.opts.env}), **self.opts.env}
        if device is not None:
            # Several GPUs: a multi-process case gets a contiguous group starting here.
            child_env["CUDA_VISIBLE_DEVICES"] = device
        return child_env

    def _prestart(self, upcoming: list[Case], device: str | None) -> None:
        """Start the workers of the next cases on ``device`` now, so their imports overlap this case.

        ``upcoming`` are the single-process cases expected next on this device, in
        order; the first ``prestart_depth`` of them get a worker. A wrong guess
        (several devices share one queue) only means a cold start.
        """
        if self.launch != "prestarted" or (device is not None and "," in device):
            return  # a torchrun case's device group: single-process cases never run on it
        upcoming = [c for c in upcoming if c.parallel == "single"][: self.opts.prestart_depth]
        with self.lock:
            have = len(self.spares.get(device, []))
        for case in upcoming[have:]:
            self._spawn(case, device)

    def _spawn(self, case: Case, device: str | None) -> None:
        family = _preload_for(case)
        with self.lock:
            self.spawned += 1
            log = self.work / f"prestart-{self.spawned}.log"
        command = [self.opts.python, "-m", "tebench.worker", "--serve", "--preload", family]
        try:
            with log.open("w") as err:
                proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                        text=True, env=self._child_env(device), start_new_session=True)
        except OSError as exc:
            # Only a speed-up: the case starts cold instead.
            sys.stderr.write(f"tebench: could not pre-start a worker ({exc}); starting cases cold\n")
            return
        with self.lock:
            self.children.add(proc)
            self.spares.setdefault(device, []).append(_Spare(proc, family, log))

    def _take_spare(self, case: Case, device: str | None) -> _Spare | None:
        """The pre-started worker for ``device`` if it can run ``case``; a stale one is ended."""
        if case.parallel != "single":
            return None  # torchrun starts its own processes; the spares wait for the next single case
        with self.lock:
            queue = self.spares.get(device)
            spare = queue.pop(0) if queue else None
        if spare is None:
            return None
        spare.pause(False)  # stopped by a case on this device that is over now
        # A worker that imported TE must not run a PyTorch case (its process would differ from a
        # cold one); one that imported only torch imports TE itself, as a cold worker does.
        wanted = _preload_for(case)
        if spare.proc.poll() is not None or (spare.family == "te" and wanted != "te"):
            self._end_spare(spare)
            return None
        return spare

    def pause_spares(self, device: str | None, stop: bool) -> None:
        """Stop (SIGSTOP) or continue the pre-started workers of ``device``.

        While a case's timed steps run, the next workers' imports would share the
        host CPUs with it; a launch-bound case (a few ms a step) is timed on
        those CPUs. Stopped, they take no CPU until the timed steps are done.
        """
        if stop and not self.opts.pause:
            return
        with self.lock:
            spares = list(self.spares.get(device, []))
        for spare in spares:
            spare.pause(stop)

    def _end_spare(self, spare: _Spare) -> None:
        _kill(spare.proc)
        spare.proc.wait()
        with self.lock:
            self.children.discard(spare.proc)
        spare.log.unlink(missing_ok=True)

    def close(self) -> None:
        """End the pre-started workers no case will use."""
        with self.lock:
            spares = [s for queue in self.spares.values() for s in queue]
            self.spares = {}
        for spare in spares:
            self._end_spare(spare)

    def _start(self, case: Case, case_file: Path, result_file: Path, log_file: Path, log: Any,
               device: str | None) -> tuple[subprocess.Popen, _Spare | None]:
        """The case's process: the pre-started worker for ``device`` if there is one, else a cold start."""
        spare = self._take_spare(case, device) if self.launch == "prestarted" else None
        if spare is not None:
            _log(log, f"# pre-started worker pid {spare.proc.pid}: {' '.join(spare.proc.args)}\n")
            job = {"case": str(case_file), "result": str(result_file), "log": str(log_file),
                   "progress": True, "sent": time.time()}
            try:
                spare.proc.stdin.write(json.dumps(job) + "\n")
                spare.proc.stdin.close()
                return spare.proc, spare
            except OSError:  # it died between the check and now: start cold
                self._end_spare(spare)
        _log(log, f"# {' '.join(self._command(case, case_file, result_file))}\n")
        proc = subprocess.Popen(self._command(case, case_file, result_file), stdout=subprocess.PIPE,
                                stderr=log, text=True, env=self._child_env(device), start_new_session=True)
        with self.lock:
            self.children.add(proc)
        return proc, None

    def run_one(self, p: Planned, device: str | None, upcoming: list[Case] | None = None) -> dict[str, Any]:
        """Run one planned case on ``device`` and record it; ``upcoming`` cases (a hint) are pre-started."""
        case = p.case
        name = f"{slug(case.id)}.r{p.round}"
        case_file, result_file = self.work / f"{name}.case.json", self.work / f"{name}.result.json"
        log_file = self.logs / f"{name}.log"
        try:
            case_file.write_text(json.dumps(case.to_dict()))
            result_file.unlink(missing_ok=True)
            log_file.write_text("")
            # Appending, line-buffered: a pre-started worker appends to the same file.
            log = log_file.open("a", buffering=1)
        except OSError as exc:
            raise _storage_error(f"cannot prepare case {case.id} in {self.work}", exc, self.opts.out) from None
        timeout = self.opts.timeout_s or case.settings.timeout_s
        key = f"{case.id}#{p.round}"
        self.display.start(key)
        started = time.time()
        last: dict[str, Any] = {}
        spare = None
        try:
            _log(log, f"# {case.id} round {p.round} device {device or 'default'}\n")
            proc, spare = self._start(case, case_file, result_file, log_file, log, device)
            self._prestart(upcoming or [], device)

            def pump() -> None:
                for line in proc.stdout:
                    try:
                        msg = json.loads(line)
                    except json.JSONDecodeError:
                        _log(log, line)
                        continue
                    if isinstance(msg, dict) and msg.get("event") == "progress":
                        if (msg["phase"] == "measure") != (last.get("phase") == "measure"):
                            self.pause_spares(device, msg["phase"] == "measure" and launch_bound(msg.get("step_ms")))
                        last.update(msg)
                        self.display.update(key, case.id, msg["phase"], msg["step"], msg["total"])

            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
            try:
                code = proc.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                _kill(proc)
                code, timed_out = proc.wait(), True
            reader.join(timeout=5)
            self.pause_spares(device, False)  # never leave a worker stopped after its predecessor ended
            with self.lock:
                self.children.discard(proc)
            if spare is not None:
                _append_prestart_log(log, spare.log)
        finally:
            with contextlib.suppress(OSError):
                log.close()
        rel_log = str(log_file.relative_to(self.opts.out))
        raw = self._outcome(case, code, timed_out, timeout, last, result_file, log_file)
        if device is not None:
            raw.setdefault("device", {})["assigned"] = device  # the --devices slot that ran it
        launch = raw.setdefault("launch", {"method": "cold" if spare is None else "prestarted"})
        if spare is not None:
            launch["paused_s"] = round(spare.paused_s, 4)
        if device in self.finished:
            # From the previous case's record to this case's hand-off: the runner's own gap.
            launch["after_previous_s"] = round(started - self.finished[device], 4)
        rec = self.record(p, raw, started, rel_log)
        self.finished[device] = time.time()
        # The record is on disk now; the hand-off files only duplicate it.
        case_file.unlink(missing_ok=True)
        result_file.unlink(missing_ok=True)
        return rec

    def _outcome(self, case: Case, code: int, timed_out: bool, timeout: float, last: dict[str, Any],
                 result_file: Path, log_file: Path) -> dict[str, Any]:
        """The worker's raw result, or why there is none; StorageError when the disk is why."""
        if timed_out:
            where = f" (last progress: {last.get('phase')} step {last.get('step')}/{last.get('total')})" if last else ""
            return {"status": "timeout", "reason": f"no result within {timeout:.0f} s{where}; process killed"}
        if result_file.is_file():
            try:
                raw = json.loads(result_file.read_text())
            except OSError as exc:
                raise _storage_error(f"cannot read the result of {case.id}", exc, self.opts.out) from None
            except ValueError:
                raw = None
            if isinstance(raw, dict):
                return raw
        # No usable result. A worker that measured its case but could not
        # write it must not be recorded as failed: stop, so --resume re-runs it.
        if code == EXIT_STORAGE or _out_of_space(self.work):
            tail = _tail(log_file, 3)
            raise StorageError(f"case {case.id}: the worker could not write its result to {self.work} "
                               f"(disk full or read-only?){'; log tail: ' + tail if tail else ''}. Finished "
                               f"cases are kept in {self.opts.out / results.RESULTS_NAME}; free space and "
                               "continue with --resume")
        how = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit code {code}"
        tail = _tail(log_file, 8)
        return {"status": "failed", "reason": f"worker died with {how} before writing a result"
                + (f"; log tail:\n{tail}" if tail else "")}

    def kill_all(self) -> None:
        with self.lock:
            for proc in list(self.children):
                _kill(proc)


def _preload_for(case: Case) -> str:
    """What a pre-started worker imports for ``case`` (``python -m tebench.worker --preload``)."""
    return "te" if MODES[case.mode].family == "te" else "torch"


def _append_prestart_log(log: Any, path: Path) -> None:
    """What a pre-started worker printed while importing (TE's warnings, say) goes to the case's log."""
    try:
        text = path.read_text(errors="replace")
        path.unlink()
    except OSError:
        return
    if text.strip():
        _log(log, "# written by the worker before its case arrived (imports):\n" + text)


def _log(log: Any, text: str) -> None:
    # A case's log is a convenience: a full disk must not turn a measured
    # case into a crash here (the result and the record are what count).
    with contextlib.suppress(OSError, ValueError):
        log.write(text)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _resume_state(path: Path, matrix: Matrix, opts: RunOptions) -> tuple[str, set[tuple[str, int]], list[dict]]:
    run = results.read(path)
    head = run.header
    if head.get("matrix", {}).get("sha256") != matrix.sha256:
        raise RunError(f"{path}: --resume with a different matrix than the run was started with "
                       f"({head.get('matrix', {}).get('source')}); use a new --out directory")
    if head.get("rounds") != opts.rounds:
        raise RunError(f"{path}: the run was started with --rounds {head.get('rounds')}, not {opts.rounds}")
    if (head.get("shard") or None) != (list(opts.shard) if opts.shard else None):
        raise RunError(f"{path}: the run was started with --shard {head.get('shard')}, not {opts.shard}")
    done = set(run.latest())
    return run.run_id, done, list(run.latest().values())


def run(matrix: Matrix, env: Environment, opts: RunOptions,
        on_record: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """Run a matrix into ``opts.out``; returns the results file's path.

    OUT is locked for the whole run (a second writer gets RunError); a storage
    failure stops the run with StorageError and loses no finished case.
    """
    cases = select_cases(matrix, opts.only, opts.shard)
    if not cases:
        raise RunError("no case of the matrix matches --only / --shard")
    check_out_dir(opts.out)
    with lock_out(opts.out):
        return _run_locked(matrix, env, resolve_options(opts), cases, on_record)


def run_header(run_id: str, matrix: Matrix, cases: list[Case], env: Environment, opts: RunOptions,
               resumed: bool) -> dict[str, Any]:
    """The header record a run writes first: its identity, matrix, cases, options and environment."""
    launch = launch_method(opts.launch, env)
    return {
        "type": "header",
        "run_id": run_id,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "resumed": resumed,
        "command": opts.command,
        "cwd": os.getcwd(),
        "tebench": tebench.__version__,
        "matrix": {"name": matrix.name, "source": matrix.source, "sha256": matrix.sha256,
                   "text_sha256": matrix.text_sha256, "data": matrix.data},
        "rounds": opts.rounds,
        "shard": list(opts.shard) if opts.shard else None,
        "case_ids": [c.id for c in cases],
        # Each [[exclude]] rule with its reason and the cases it removed from the matrix.
        "excluded": [rule.to_dict() for rule in expand(matrix).excluded],
        "devices": opts.devices,
        "launch": launch,
        "prestart_depth": opts.prestart_depth if launch == "prestarted" else None,
        "prestart_pause": opts.pause if launch == "prestarted" else None,
        # The state the cache was in before the run, as the cases' processes will see it.
        "compile_cache": caches.describe(opts.compile_cache, {**os.environ, **opts.env}),
        "env": env.to_dict(),
    }


def _run_locked(matrix: Matrix, env: Environment, opts: RunOptions, cases: list[Case],
                on_record: Callable[[dict[str, Any]], None] | None) -> Path:
    path = opts.out / results.RESULTS_NAME
    planned = plan(cases, env, opts.rounds)
    done: set[tuple[str, int]] = set()
    previous: list[dict[str, Any]] = []
    if path.exists() and path.stat().st_size > 0:
        if not opts.resume:
            raise RunError(f"{opts.out} already holds results; pass --resume to continue that run, "
                           "or choose another --out")
        run_id, done, previous = _resume_state(path, matrix, opts)
    else:
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    todo = [p for p in planned if (p.case.id, p.round) not in done]
    header = run_header(run_id, matrix, cases, env, opts, resumed=bool(done))
    try:  # the CLI checked it; a caller of run() may not have
        caches.prepare(opts.compile_cache)
    except OSError as exc:
        raise RunError(f"--compile-cache {opts.compile_cache}: cannot create it ({exc.strerror})") from None
    display = Display(len(todo), opts.live)
    if done:
        sys.stderr.write(f"resuming run {run_id}: {len(done)} case-round(s) already recorded, {len(todo)} to go\n")
    try:
        writer = results.Writer(path)
        writer.append(header)
    except OSError as exc:
        raise _storage_error(f"cannot write {path}", exc, opts.out) from None
    with writer:
        ex = Executor(opts, env, run_id, writer, previous, display)
        try:
            _execute(ex, todo, opts.devices, on_record)
            ex.close()
        except KeyboardInterrupt:
            ex.kill_all()
            sys.stderr.write(f"\ninterrupted; results so far are in {path} (continue with --resume)\n")
            raise
        except BaseException:
            ex.kill_all()  # a storage failure in one device thread: stop the others' children too
            raise
    with contextlib.suppress(OSError):
        (opts.out / ".work").rmdir()  # only if empty
    return path


def upcoming_cases(planned: Iterable[Planned], limit: int = 8) -> list[Case]:
    """The next single-process cases that will run (skips and torchrun cases take no pre-started worker).

    ``planned`` is read only as far as needed, so callers pass a lazy view of what is left: this
    runs before every case, and a copy of the rest of a long run (``--rounds``) each time was
    quadratic in its length.
    """
    return [q.case for q in itertools.islice((q for q in planned if not q.skip and q.case.parallel == "single"),
                                             limit)]


def _execute(ex: Executor, todo: list[Planned], devices: list[str] | None,
             on_record: Callable[[dict[str, Any]], None] | None) -> None:
    def handle(p: Planned, device: str | None, upcoming: list[Case] | None = None) -> None:
        rec = ex.skip(p) if p.skip else ex.run_one(p, device, upcoming)
        if on_record:
            on_record(rec)

    if not devices or len(devices) == 1:
        for i, p in enumerate(todo):
            handle(p, devices[0] if devices else None, upcoming_cases(todo[j] for j in range(i + 1, len(todo))))
        return
    # One case per GPU at a time. A case needing k processes takes k devices.
    pending: "queue.Queue[Planned]" = queue.Queue()
    for p in todo:
        pending.put(p)
    free = list(devices)
    cond = threading.Condition()
    errors: list[BaseException] = []

    def take(k: int) -> list[str] | None:
        with cond:
            while len(free) < k:
                if k > len(devices):
                    return None
                cond.wait()
            got = [free.pop(0) for _ in range(k)]
            return got

    def give(devs: list[str]) -> None:
        with cond:
            free.extend(devs)
            free.sort(key=devices.index)
            cond.notify_all()

    def worker() -> None:
        while not errors:
            try:
                p = pending.get_nowait()
            except queue.Empty:
                return
            try:
                if p.skip:
                    handle(p, None)
                    continue
                k = p.case.nproc if p.case.parallel != "single" else 1
                devs = take(k)
                if devs is None:
                    handle(Planned(p.case, p.round, f"needs {k} devices; --devices gives {len(devices)}"), None)
                    continue
                try:
                    # Whichever case a device thread takes next may land here; the head of the
                    # queue is the best guess (a wrong guess only means a cold start).
                    with pending.mutex:  # device threads take from it meanwhile
                        upcoming = upcoming_cases(pending.queue)
                    handle(p, ",".join(devs), upcoming)
                finally:
                    give(devs)
            except BaseException as exc:  # e.g. a full disk: stop taking work, report it from the main thread
                errors.append(exc)

    threads = [threading.Thread(target=worker, name=f"tebench-dev{d}") for d in devices]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
