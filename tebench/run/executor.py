"""Runs planned cases in worker processes, one process per case, and records each as it finishes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, TYPE_CHECKING
import tebench
from tebench import envvars
from tebench.run import caches
from tebench.analysis import parity
from tebench.store import reader as results
from tebench.store.writer import Writer
from tebench.errors import StorageError
from tebench.schema import protocol
from tebench.schema.protocol import EXIT_STORAGE
from tebench.run.pump import Pump
from tebench.plan.schedule import Planned
from tebench.run.display import Progress
from tebench.run.outdir import out_of_space, storage_error
from tebench.run.case_log import append_prestart_log, log_tail, write_log
from tebench.run.prestart import Spare, launch_bound, preload_for
from tebench.run.record_builder import build_record, measurements
from tebench.schema.records import CaseResult, Device, Launch, Measurements
from tebench.run.options import RunOptions, launch_method, resolve_options

if TYPE_CHECKING:  # the type only: --help builds the parser without pydantic
    from tebench.schema.records import Case
    from tebench.schema.environment import Environment


SLUG_MAX_CHARS = 120
"""The readable part of a case's file names; the hash keeps longer ids apart (names stay < 255 bytes)."""


def slug(case_id: str) -> str:
    """A file name for a case id, unique by construction: a readable ASCII form plus a hash of the id.

    The readable part alone is not unique (``小`` and ``大``, ``a b`` and ``a+b`` read the
    same), and two cases sharing a hand-off file would swap measurements under --devices.
    """
    parts = (re.sub(r"[^A-Za-z0-9._-]+", "_", part).strip("_") or "x" for part in case_id.split("/"))
    readable = "__".join(parts)[:SLUG_MAX_CHARS]
    return f"{readable}.{hashlib.sha256(case_id.encode()).hexdigest()[:8]}"


def child_pythonpath() -> str:
    """Make the child import this very tebench, installed or not."""
    root = str(Path(tebench.__file__).resolve().parent.parent)
    current = os.environ.get("PYTHONPATH", "")
    return root if not current else f"{root}{os.pathsep}{current}"


# What the worker's tebench says its protocol pipe's variable is. The protocol's module moved from
# run/ to schema/ (2026-12-04): it is looked for in that tebench's own folder, both places (an
# editable install's import hook would answer ``tebench.schema`` from this checkout instead).
_PIPE_PROBE = """
import importlib.util, os, tebench
for where in ("schema", "run"):
    path = os.path.join(os.path.dirname(tebench.__file__), where, "protocol.py")
    if os.path.exists(path):
        spec = importlib.util.spec_from_file_location("tebench_protocol", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(getattr(module, "PROTOCOL_FD_ENV", ""))
        break
"""


LAUNCHER_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                 "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT")
"""What torch.distributed's launcher tells each of its processes. One left in the runner's environment (a
shell in a torchrun job, a cluster's batch script) would make a single-process worker take itself for rank 1
and keep its result to itself; a data-parallel case's launcher sets its own."""


class Executor:
    """Runs planned cases in child processes and records each as it finishes (``tebench run`` drives
    it over a matrix; ``tebench ab`` interleaves two of them).

    With ``launch = prestarted``, while a case runs on a device the worker for the
    next case on that device is already started and importing torch (and TE when
    that case needs it): no GPU work, no CUDA context. It still runs exactly one
    case, so isolation, timeouts and --resume are those of a cold start.
    """

    def __init__(self, opts: RunOptions, env: Environment, run_id: str, writer: Writer,
                 records: list[CaseResult], display: Progress):
        self.opts, self.env, self.run_id = resolve_options(opts), env, run_id
        self.writer, self.records, self.display = writer, records, display
        self.lock = threading.Lock()
        self.children: set[subprocess.Popen] = set()
        self.launch = launch_method(opts.launch, env)
        self.spares: dict[str | None, list[Spare]] = {}
        """Per device, the pre-started workers of its upcoming single-process cases, in order."""
        self.spawned = 0
        self._pipe: bool | None = None
        """Whether the workers take the protocol pipe (``_speaks_pipe``); None until asked."""
        self.finished: dict[str | None, float] = {}
        """When the last case on each device was recorded: the hand-off time to the next one is kept."""
        # Absolute: a workload may change directory in build, and the worker must still find its files.
        self.work = Path(os.path.abspath(opts.out)) / ".work"
        self.logs = opts.out / "logs"
        try:
            self.work.mkdir(parents=True, exist_ok=True)
            self.logs.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(f"cannot create {self.work} and {self.logs}", exc, opts.out) from None

    def record(self, p: Planned, raw: Measurements, started: float, log: str | None) -> CaseResult:
        """Build, judge and write the record of ``p`` from the worker's measurements; returns it as written."""
        rec = build_record(p, raw, self.env, self.run_id, started, time.time() - started, log)
        with self.lock:
            if rec.loss is not None and rec.status in ("ok", "diverged"):
                rec.parity = parity.judge(self.records + [rec], rec)
            try:
                self.writer.append(rec)
            except OSError as exc:
                raise storage_error(f"cannot record {rec.case_id} in {self.writer.path}", exc,
                                     self.opts.out) from None
            self.records.append(rec)
        self.display.finish(rec)
        return rec

    def skip(self, p: Planned) -> CaseResult:
        return self.record(p, Measurements(status="skipped", reason=p.skip), time.time(), None)

    def _command(self, case: Case, case_file: Path, result_file: Path) -> list[str]:
        worker = ["-m", "tebench.worker", "--case", str(case_file), "--result", str(result_file), "--progress"]
        if case.parallel == "single":
            return [self.opts.python, *worker]
        return [self.opts.python, "-m", "torch.distributed.run", "--standalone",
                f"--nproc-per-node={case.nproc}", *worker]

    def _child_env(self, device: str | None, protocol_fd: int | None = None) -> dict[str, str]:
        # PYTHONSAFEPATH (Python >= 3.11): `python -m` would put the working directory first on the
        # import path, and a folder named tebench there would stand in for tebench. A workload named
        # by import path is still found there: plugin resolution appends the working directory.
        # The runner's own pid comes last: a user's --env/--head-env naming TEBENCH_PARENT_PID (a dead pid) would
        # otherwise make every worker watch the wrong process and end itself.
        inherited = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
        child_env = {**inherited, "PYTHONUNBUFFERED": "1", "PYTHONPATH": child_pythonpath(), "PYTHONSAFEPATH": "1",
                     **caches.child_env(self.opts.compile_cache, {**os.environ, **self.opts.env}), **self.opts.env,
                     envvars.PARENT_PID: str(os.getpid())}
        if device is not None:
            # Several GPUs: a multi-process case gets a contiguous group starting here.
            child_env["CUDA_VISIBLE_DEVICES"] = device
        # Only a worker handed the pipe may name it; any other writes its protocol lines on stdout.
        child_env.pop(protocol.PROTOCOL_FD_ENV, None)
        if protocol_fd is not None:
            child_env[protocol.PROTOCOL_FD_ENV] = str(protocol_fd)
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
        family = preload_for(case)
        with self.lock:
            self.spawned += 1
            log = self.work / f"prestart-{self.spawned}.log"
        command = [self.opts.python, "-m", "tebench.worker", "--serve", "--preload", family]
        try:
            # What it prints while importing, on either stream, waits in its own log until a case takes it.
            with log.open("w") as err:
                proc, channel, on_stdout = self._popen(command, device, err, pipe=self._speaks_pipe(),
                                                       stdin=subprocess.PIPE)
        except OSError as exc:
            # Only a speed-up: the case starts cold instead.
            sys.stderr.write(f"tebench: could not pre-start a worker ({exc}); starting cases cold\n")
            return
        with self.lock:
            self.children.add(proc)
            self.spares.setdefault(device, []).append(Spare(proc, family, log, channel, on_stdout))

    def _popen(self, command: list[str], device: str | None, out: Any, pipe: bool,
               stdin: int | None = None) -> tuple[subprocess.Popen, int, bool]:
        """Start a worker with stdout and stderr to ``out`` (the case's log); also the descriptor its
        protocol lines arrive on, and whether that is its stdout.

        With ``pipe``, a pipe of its own, whose write end it inherits (``pass_fds``) and is told of
        (tebench.schema.protocol). Without (torchrun, whose ranks cannot inherit it, or a worker of a
        tebench that predates the pipe), its stdout, where they come among the workload's output.
        """
        if not pipe:
            proc = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE, stderr=out, text=True,
                                    env=self._child_env(device), start_new_session=True)
            assert proc.stdout is not None  # stdout=PIPE
            channel = os.dup(proc.stdout.fileno())  # the pump's own descriptor; the file object is closed
            proc.stdout.close()
            return proc, channel, True
        channel, end = os.pipe()
        try:
            proc = subprocess.Popen(command, stdin=stdin, stdout=out, stderr=out, text=True, pass_fds=(end,),
                                    env=self._child_env(device, end), start_new_session=True)
        except BaseException:
            os.close(channel)
            raise
        finally:
            os.close(end)  # the worker's copy is the only writer: its exit is the pipe's end of file
        return proc, channel, False

    def _speaks_pipe(self) -> bool:
        """Whether this run's workers take the protocol pipe: their tebench knows it.

        ``tebench ab`` may run the base side with another checkout's tebench, one from before the
        pipe, whose worker writes its progress on stdout; it keeps that. Asked once per run.
        """
        with self.lock:
            pipe = getattr(self, "_pipe", None)
            if pipe is None:
                code = _PIPE_PROBE
                try:
                    answer = subprocess.run([self.opts.python, "-c", code], capture_output=True, text=True,
                                            env=self._child_env(None), timeout=120).stdout.strip()
                except (OSError, subprocess.SubprocessError):
                    answer = ""
                pipe = self._pipe = answer == protocol.PROTOCOL_FD_ENV
            return pipe

    def _take_spare(self, case: Case, device: str | None) -> Spare | None:
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
        wanted = preload_for(case)
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

    def _end_spare(self, spare: Spare) -> None:
        kill_group(spare.proc)
        spare.proc.wait()
        spare.close_channel()
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
               device: str | None) -> tuple[subprocess.Popen, Spare | None, int, bool]:
        """The case's process: the pre-started worker for ``device`` if there is one, else a cold start.

        Also the descriptor its protocol lines arrive on, and whether that is its stdout (a torchrun
        case: the ranks cannot inherit a pipe, rank 0 speaks on stdout) rather than a pipe of their own.
        """
        spare = self._take_spare(case, device) if self.launch == "prestarted" else None
        if spare is not None:
            argv = spare.proc.args  # the list _popen started it with
            started = " ".join(map(str, argv)) if isinstance(argv, list) else str(argv)
            write_log(log, f"# pre-started worker pid {spare.proc.pid}: {started}\n")
            job = {"case": str(case_file), "result": str(result_file), "log": str(log_file),
                   "progress": True, "sent": time.time()}
            try:
                stdin = spare.proc.stdin
                assert stdin is not None, "a spare is started with a pipe on its stdin"
                stdin.write(json.dumps(job) + "\n")
                stdin.close()
                channel, spare.channel = spare.channel, None  # the pump owns it now
                assert channel is not None, "a spare in the queue holds its channel until a case takes it"
                return spare.proc, spare, channel, spare.on_stdout
            except OSError:  # it died between the check and now: start cold
                self._end_spare(spare)
        command = self._command(case, case_file, result_file)
        write_log(log, f"# {' '.join(command)}\n")
        proc, channel, on_stdout = self._popen(command, device, log,
                                               pipe=case.parallel == "single" and self._speaks_pipe())
        with self.lock:
            self.children.add(proc)
        return proc, None, channel, on_stdout

    def run_one(self, p: Planned, device: str | None, upcoming: list[Case] | None = None) -> CaseResult:
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
            raise storage_error(f"cannot prepare case {case.id} in {self.work}", exc, self.opts.out) from None
        timeout = self.opts.timeout_s or case.settings.timeout_s
        key = f"{case.id}#{p.round}"
        self.display.start(key)
        started = time.time()
        last: dict[str, Any] = {}
        spare = None
        try:
            write_log(log, f"# {case.id} round {p.round} device {device or 'default'}\n")
            proc, spare, channel, on_stdout = self._start(case, case_file, result_file, log_file, log, device)

            def on_line(line: str) -> None:
                msg = protocol.parse(line)
                if msg is None:
                    # On stdout (a torchrun case), the workload's own output; on the pipe, nothing else
                    # writes, but a line that is not a message is kept rather than lost.
                    write_log(log, line if on_stdout else f"# not a protocol line, on the protocol pipe: {line}")
                    return
                if msg["event"] != protocol.PROGRESS:
                    return  # "ready": a pre-started worker's imports are done; nothing waits on it
                try:
                    if (msg["phase"] == "measure") != (last.get("phase") == "measure"):
                        self.pause_spares(device, msg["phase"] == "measure" and launch_bound(msg.get("step_ms")))
                    last.update(msg)
                    self.display.update(key, case.id, msg["phase"], msg["step"], msg["total"])
                except Exception as exc:  # noqa: BLE001  (a display problem must not stop the pump)
                    write_log(log, f"# progress line not shown ({type(exc).__name__}: {exc}): {line}")

            # The pump reads until the worker is gone, whatever it leaves behind: were it to stop
            # early, the pipe would fill and the worker block until its timeout.
            pump = Pump(channel, on_line).start()
            self._prestart(upcoming or [], device)
            try:
                code = proc.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                kill_group(proc)
                code, timed_out = proc.wait(), True
            pump.finish(timeout=5)
            self.pause_spares(device, False)  # never leave a worker stopped after its predecessor ended
            with self.lock:
                self.children.discard(proc)
            if spare is not None:
                append_prestart_log(log, spare.log)
        finally:
            with contextlib.suppress(OSError):
                log.close()
        rel_log = str(log_file.relative_to(self.opts.out))
        raw = self._outcome(case, code, timed_out, timeout, last, result_file, log_file)
        if device is not None:
            raw.device = raw.device or Device()
            raw.device.assigned = device  # the --devices slot that ran it
        launch = raw.launch = raw.launch or Launch(method="cold" if spare is None else "prestarted")
        if spare is not None:
            launch.paused_s = round(spare.paused_s, 4)
        if device in self.finished:
            # From the previous case's record to this case's hand-off: the runner's own gap.
            launch.after_previous_s = round(started - self.finished[device], 4)
        rec = self.record(p, raw, started, rel_log)
        self.finished[device] = time.time()
        # The record is on disk now; the hand-off files only duplicate it.
        case_file.unlink(missing_ok=True)
        result_file.unlink(missing_ok=True)
        return rec

    def _outcome(self, case: Case, code: int, timed_out: bool, timeout: float, last: dict[str, Any],
                 result_file: Path, log_file: Path) -> Measurements:
        """The worker's measurements, or why there are none; StorageError when the disk is why."""
        if timed_out:
            where = f" (last progress: {last.get('phase')} step {last.get('step')}/{last.get('total')})" if last else ""
            return Measurements(status="timeout", reason=f"no result within {timeout:.0f} s{where}; process killed")
        if result_file.is_file():
            try:
                raw = json.loads(result_file.read_text())
            except OSError as exc:
                raise storage_error(f"cannot read the result of {case.id}", exc, self.opts.out) from None
            except ValueError:
                raw = None
            if isinstance(raw, dict):
                ran = raw.get("case_id")  # absent from the results of workers older than the echo
                if ran is not None and ran != case.id:
                    return Measurements(status="failed", reason=f"the result file {result_file.name} is of case "
                                        f"{ran!r}, not of {case.id!r} that was launched; its measurements are "
                                        "not recorded")
                return measurements(raw)
        # No usable result. A worker that measured its case but could not
        # write it must not be recorded as failed: stop, so --resume re-runs it.
        if code == EXIT_STORAGE or out_of_space(self.work):
            tail = log_tail(log_file, 3)
            raise StorageError(f"case {case.id}: the worker could not write its result to {self.work} "
                               f"(disk full or read-only?){'; log tail: ' + tail if tail else ''}. Finished "
                               f"cases are kept in {self.opts.out / results.RESULTS_NAME}; free space and "
                               "continue with --resume")
        how = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit code {code}"
        tail = log_tail(log_file, 8)
        return Measurements(status="failed", reason=f"worker died with {how} before writing a result"
                            + (f"; the end of its log, logs/{log_file.name}:\n{tail}" if tail else ""))

    def kill_all(self) -> None:
        with self.lock:
            for proc in list(self.children):
                kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
