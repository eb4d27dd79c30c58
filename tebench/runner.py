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
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import tebench
from tebench import parity, results, shard, stats
from tebench.detect import Environment
from tebench.gates import gate_case
from tebench.matrix import Case, Matrix, iter_cases, reference_order
from tebench.workloads import WORKLOADS

LOG_TAIL_LINES = 25


class RunError(RuntimeError):
    """A run that cannot start (e.g. --resume against a different matrix)."""


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
    status = record["status"]
    head = f"{status:<8} {record['case_id']}" + (f" (round {record['round']})" if record.get("round") else "")
    if status in ("ok", "diverged") and record.get("timing", {}).get("stats", {}).get("median") is not None:
        st = record["timing"]["stats"]
        tp = record.get("throughput", {})
        bits = [f"{st['median']:.2f} ms/step (IQR {st['iqr']:.2f})"]
        if tp.get("tokens_per_s"):
            bits.append(f"{tp['tokens_per_s']:,.0f} tok/s")
        if tp.get("mfu") is not None:
            bits.append(f"MFU {tp['mfu'] * 100:.1f}%")
        verdict = record.get("parity", {}).get("verdict")
        if verdict:
            bits.append(f"parity {verdict}")
        return f"{head}: " + ", ".join(bits)
    if record.get("reason"):
        return f"{head}: {record['reason']}"
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
    for key in ("memory", "loss", "validation", "gpu_busy", "fp8_state", "setup", "phases", "distributed"):
        if raw.get(key) is not None:
            record[key] = raw[key]
    timing = raw.get("timing")
    if timing:
        summary = stats.summarize(timing["samples_ms"])
        record["timing"] = {**timing, "stats": summary}
        wl = WORKLOADS[case.workload]
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


class _Executor:
    """Runs planned cases in child processes and records each as it finishes."""

    def __init__(self, opts: RunOptions, env: Environment, run_id: str, writer: results.Writer,
                 records: list[dict[str, Any]], display: Display):
        self.opts, self.env, self.run_id = opts, env, run_id
        self.writer, self.records, self.display = writer, records, display
        self.lock = threading.Lock()
        self.children: set[subprocess.Popen] = set()
        self.work = opts.out / ".work"
        self.logs = opts.out / "logs"
        self.work.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)

    def record(self, p: Planned, raw: dict[str, Any], started: float, log: str | None) -> dict[str, Any]:
        rec = build_record(p, raw, self.env, self.run_id, started, time.time() - started, log)
        with self.lock:
            if rec.get("loss") and rec["status"] in ("ok", "diverged"):
                rec["parity"] = parity.judge(self.records + [rec], rec)
            self.writer.append(rec)
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

    def run_one(self, p: Planned, device: str | None) -> dict[str, Any]:
        case = p.case
        name = f"{slug(case.id)}.r{p.round}"
        case_file, result_file = self.work / f"{name}.case.json", self.work / f"{name}.result.json"
        log_file = self.logs / f"{name}.log"
        case_file.write_text(json.dumps(case.to_dict()))
        result_file.unlink(missing_ok=True)
        child_env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": _pythonpath(),
                     "TEBENCH_PARENT_PID": str(os.getpid()), **self.opts.env}
        if device is not None:
            # Several GPUs: a multi-process case gets a contiguous group starting here.
            child_env["CUDA_VISIBLE_DEVICES"] = device
        timeout = self.opts.timeout_s or case.settings.timeout_s
        key = f"{case.id}#{p.round}"
        self.display.start(key)
        started = time.time()
        last: dict[str, Any] = {}
        with log_file.open("w") as log:
            log.write(f"# {case.id} round {p.round} device {device or 'default'}\n# {' '.join(self._command(case, case_file, result_file))}\n")
            log.flush()
            proc = subprocess.Popen(self._command(case, case_file, result_file), stdout=subprocess.PIPE,
                                    stderr=log, text=True, env=child_env, start_new_session=True)
            with self.lock:
                self.children.add(proc)

            def pump() -> None:
                for line in proc.stdout:
                    try:
                        msg = json.loads(line)
                    except json.JSONDecodeError:
                        log.write(line)
                        continue
                    if isinstance(msg, dict) and msg.get("event") == "progress":
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
            with self.lock:
                self.children.discard(proc)
        rel_log = str(log_file.relative_to(self.opts.out))
        if timed_out:
            where = f" (last progress: {last.get('phase')} step {last.get('step')}/{last.get('total')})" if last else ""
            raw = {"status": "timeout", "reason": f"no result within {timeout:.0f} s{where}; process killed"}
        elif result_file.is_file():
            raw = json.loads(result_file.read_text())
        else:
            how = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit code {code}"
            tail = _tail(log_file, 8)
            raw = {"status": "failed", "reason": f"worker died with {how} before writing a result"
                   + (f"; log tail:\n{tail}" if tail else "")}
        if device is not None:
            raw.setdefault("device", {})["assigned"] = device  # the --devices slot that ran it
        rec = self.record(p, raw, started, rel_log)
        # The record is on disk now; the hand-off files only duplicate it.
        case_file.unlink(missing_ok=True)
        result_file.unlink(missing_ok=True)
        return rec

    def kill_all(self) -> None:
        with self.lock:
            for proc in list(self.children):
                _kill(proc)


Executor = _Executor
"""Public name for callers that drive cases one by one (``tebench ab`` interleaves two runs)."""


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
    """Run a matrix into ``opts.out``; returns the results file's path."""
    path = opts.out / results.RESULTS_NAME
    cases = select_cases(matrix, opts.only, opts.shard)
    if not cases:
        raise RunError("no case of the matrix matches --only / --shard")
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
    opts.out.mkdir(parents=True, exist_ok=True)
    header = {
        "type": "header",
        "run_id": run_id,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "resumed": bool(done),
        "command": opts.command,
        "cwd": os.getcwd(),
        "tebench": tebench.__version__,
        "matrix": {"name": matrix.name, "source": matrix.source, "sha256": matrix.sha256,
                   "text_sha256": matrix.text_sha256, "data": matrix.data},
        "rounds": opts.rounds,
        "shard": list(opts.shard) if opts.shard else None,
        "case_ids": [c.id for c in cases],
        "devices": opts.devices,
        "env": env.to_dict(),
    }
    display = Display(len(todo), opts.live)
    if done:
        sys.stderr.write(f"resuming run {run_id}: {len(done)} case-round(s) already recorded, {len(todo)} to go\n")
    with results.Writer(path) as writer:
        writer.append(header)
        ex = _Executor(opts, env, run_id, writer, previous, display)
        try:
            _execute(ex, todo, opts.devices, on_record)
        except KeyboardInterrupt:
            ex.kill_all()
            sys.stderr.write(f"\ninterrupted; results so far are in {path} (continue with --resume)\n")
            raise
    with contextlib.suppress(OSError):
        (opts.out / ".work").rmdir()  # only if empty
    return path


def _execute(ex: _Executor, todo: list[Planned], devices: list[str] | None,
             on_record: Callable[[dict[str, Any]], None] | None) -> None:
    def handle(p: Planned, device: str | None) -> None:
        rec = ex.skip(p) if p.skip else ex.run_one(p, device)
        if on_record:
            on_record(rec)

    if not devices or len(devices) == 1:
        for p in todo:
            handle(p, devices[0] if devices else None)
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
            if p.skip:
                handle(p, None)
                continue
            k = p.case.nproc if p.case.parallel != "single" else 1
            devs = take(k)
            if devs is None:
                handle(Planned(p.case, p.round, f"needs {k} devices; --devices gives {len(devices)}"), None)
                continue
            try:
                handle(p, ",".join(devs))
            except BaseException as exc:  # keep the pool alive long enough to report
                errors.append(exc)
            finally:
                give(devs)

    threads = [threading.Thread(target=worker, name=f"tebench-dev{d}") for d in devices]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
