"""The child process that runs one case: ``python -m tebench.worker``.

It reads the case from a JSON file, runs it on its device, and writes the raw
measurements (or the failure) to a result file, atomically. Progress goes as
JSON lines (tebench.schema.protocol) to the pipe the runner handed it, for the
parent's live display; its stdout and stderr are the case's log, whatever the
workload prints on them. Without a pipe (under torchrun, which does not pass
it on to the ranks) rank 0 writes the progress lines on stdout. A watchdog ends
the process when the runner that started it is gone, so a killed run leaves no
orphan on the GPU. Under torchrun, every rank runs the case and rank 0 writes
the result.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import stat
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, TextIO
from tebench import envvars
from tebench.plan.faults import fault_for
from tebench.schema.protocol import EXIT_STORAGE, PROTOCOL_FD_ENV, progress_line, ready_line
from tebench.schema.records import Device, Launch, Measurements, Memory, Phases
from tebench.workloads.plugins import failure_reason


_CPU_ALLOCATION_FAILED = "DefaultCPUAllocator: can't allocate memory"
"""How torch's CPU allocator says a tensor did not fit in memory (a RuntimeError)."""

def _watch_parent() -> None:
    pid = envvars.parent_pid()
    if not pid:
        return

    def loop() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(3)
            except PermissionError:
                pass

    threading.Thread(target=loop, daemon=True, name="tebench-parent-watchdog").start()


def protocol_stream() -> TextIO:
    """Where this worker writes its protocol lines: the pipe the runner named, else stdout.

    The variable is removed once read: a process the workload starts must not take the number
    for a pipe of its own. A number that is not an open pipe (a variable inherited by mistake)
    is said on stderr, and stdout serves, as it does for a worker started without a pipe.
    """
    named = os.environ.pop(PROTOCOL_FD_ENV, None)
    if named is None:
        return sys.stdout
    try:
        fd = int(named)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise OSError(f"descriptor {fd} is not a pipe")
        os.set_inheritable(fd, False)
        # Unbuffered below the text layer: a line is written whole at once, and a write that failed
        # (the runner gone) leaves nothing behind for the exit to fail on again.
        return io.TextIOWrapper(os.fdopen(fd, "wb", buffering=0), encoding="utf-8", write_through=True)
    except (ValueError, OSError) as exc:
        print(f"tebench worker: {PROTOCOL_FD_ENV}={named!r} is not an open pipe ({exc}); "
              "protocol lines go to stdout", file=sys.stderr)
        return sys.stdout


class _Progress:
    """Throttled progress lines (at most a few per second), and every change of phase at once: the
    runner stops pre-started workers while a launch-bound case's timed steps ("measure") run.

    They go to ``stream`` (the protocol pipe; None: stdout as it is at each call). A stream that
    fails (the runner gone) silences them: progress is for the display, the result is what counts.
    """

    def __init__(self, enabled: bool, stream: TextIO | None = None):
        self.enabled = enabled
        self.stream = stream
        self.last = 0.0
        self.phase = ""

    def __call__(self, phase: str, step: int, total: int, step_ms: float | None = None) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.last < 0.25 and step not in (0, total) and phase == self.phase):
            return
        self.last, self.phase = now, phase
        stream = self.stream or sys.stdout
        try:
            stream.write(progress_line(phase, step, total, step_ms))
            stream.flush()
        except (OSError, ValueError):
            self.enabled = False


def _write(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(json.dumps(payload, allow_nan=True))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _deliver(path: Path, payload: dict[str, Any]) -> int:
    """Write the result; EXIT_STORAGE (and why, on stderr) when the disk refuses it."""
    try:
        _write(path, payload)
    except OSError as exc:
        print(f"tebench worker: cannot write the result {path}: {exc}", file=sys.stderr)
        return EXIT_STORAGE
    return 0


def _device(torch: Any) -> Any:
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


def _device_info(torch: Any, device: Any) -> dict[str, Any]:
    if device.type != "cuda":
        from tebench.plan.environment import cpu_model
        from tebench.schema.environment import cpu_device_name

        # The one naming rule of a CPU, the same in skip records, measured ones and the header.
        return {"type": "cpu", "name": cpu_device_name(cpu_model()), "index": None}
    props = torch.cuda.get_device_properties(device)
    return {
        "type": "cuda",
        "name": props.name,
        "index": device.index,
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "capability": [props.major, props.minor],
        "memory_bytes": props.total_memory,
        # The physical GPU, so compare can tell two GPUs of one model apart.
        "uuid": str(getattr(props, "uuid", "") or "") or None,
    }


# Modules a case imports lazily on its first step (torch.compile's machinery, which
# Transformer Engine's fused functions use too; the optimizer; the profiler). On the
# H200 these imports were most of the first step of a TE case and most of a cold
# PyTorch case's 3-5 s build. A pre-started worker imports them while it waits.
PRELOAD_MODULES = (
    "torch._dynamo",
    "torch._inductor.compile_fx",
    "torch._inductor.inductor_prims",
    "torch._functorch.aot_autograd",
    "torch.optim",
    "torch.profiler",
)


def preload(family: str) -> dict[str, Any]:
    """Import what a case of ``family`` needs, without touching the GPU.

    Nothing here creates a CUDA context (importing Transformer Engine does not
    either: on the H200, ``torch.cuda.is_initialized()`` stayed False and the
    process was not among nvidia-smi's compute apps), so a pre-started worker
    holds no GPU memory and runs no kernel while the previous case measures.
    """
    import importlib

    t = time.perf_counter()
    import torch  # noqa: F401

    # TE first, before anything initialises cuDNN through torch (see worker/probe.py).
    names = (("transformer_engine.pytorch",) if family == "te" else ()) + PRELOAD_MODULES
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # an optional speed-up; the case imports what it needs itself
            failed.append(f"{name}: {type(exc).__name__}")
    return {"family": family, "preload_s": time.perf_counter() - t, "preload_failed": failed}


def _serve(args: argparse.Namespace, channel: TextIO) -> tuple[argparse.Namespace, dict[str, Any]]:
    """Pre-started mode: import, say ready, then wait for one case on stdin.

    The runner sends one JSON line ``{"case", "result", "log", "progress", "sent"}``;
    from then on this process is exactly the cold worker for that case (one case
    per process: isolation and --resume are unchanged).
    """
    launch = {"method": "prestarted", **preload(args.preload)}
    channel.write(ready_line())
    channel.flush()
    ready, ready_at = time.perf_counter(), time.time()
    line = sys.stdin.readline()
    if not line.strip():
        os._exit(0)  # the runner needed no more cases
    job = json.loads(line)
    launch["waited_s"] = time.perf_counter() - ready
    launch["sent"] = job.get("sent")
    # The imports that were still running when the case arrived are in its start-up;
    # only the rest was hidden behind the previous case.
    late = max(0.0, ready_at - launch["sent"]) if launch["sent"] else 0.0
    launch["hidden_s"] = max(0.0, launch["preload_s"] - late)
    # The case's log: what this process writes to stderr from now on lands there, and to stdout
    # too unless stdout carries the protocol (no pipe).
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(job["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 2)
    if channel is not sys.stdout:
        os.dup2(fd, 1)
    os.close(fd)
    return argparse.Namespace(case=job["case"], result=job["result"], progress=bool(job.get("progress")),
                              serve=False, preload=args.preload), launch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tebench.worker")
    parser.add_argument("--case", help="JSON file holding the case")
    parser.add_argument("--result", help="where to write the result JSON")
    parser.add_argument("--progress", action="store_true",
                        help=f"write progress lines (to the pipe named by {PROTOCOL_FD_ENV}, else stdout)")
    parser.add_argument("--serve", action="store_true",
                        help="pre-started: import first, then read one case as a JSON line on stdin")
    parser.add_argument("--preload", choices=("torch", "te"), default="torch",
                        help="with --serve: import Transformer Engine too (te) or only PyTorch")
    args = parser.parse_args(argv)
    _watch_parent()
    channel = protocol_stream()
    launch: dict[str, Any] = {"method": "cold"}
    if args.serve:
        args, launch = _serve(args, channel)
    elif not (args.case and args.result):
        parser.error("--case and --result are required (or --serve)")
    # The case's clock: for a pre-started worker, from the moment the runner sent the case
    # (imports still under way then are counted); imports done before are in launch["preload_s"].
    started = launch.pop("sent", None) or time.time()

    from tebench.schema.records import Case

    case = Case.from_dict(json.loads(Path(args.case).read_text()))
    # A single-process case is its own rank 0 whatever the environment says; torchrun sets RANK for its ranks.
    rank = 0 if case.parallel == "single" else int(os.environ.get("RANK", "0"))
    result_path = Path(args.result)
    # Test hook (tebench.plan.faults): process faults act here, mutations in tebench.worker.train.
    fault = fault_for(case.id)
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault == "hang":
        time.sleep(10**6)

    import torch

    from tebench.plan.modes import MODES

    device = _device(torch)
    payload = Measurements(device=Device.from_dict(_device_info(torch, device)), launch=Launch.from_dict(launch))
    try:
        if MODES[case.mode].family == "te":
            # Import TE before anything initialises cuDNN through torch (see worker/probe.py).
            import transformer_engine.pytorch  # noqa: F401
        # Imports (cold start only), CUDA context and (TE) library loading: the price of
        # isolation, kept visible.
        startup_s = time.time() - started
        if fault == "oom":  # as each device's allocator says it
            if device.type == "cuda":
                raise torch.OutOfMemoryError("CUDA out of memory (injected by TEBENCH_TEST_FAULT)")
            raise RuntimeError(f"[enforce fail at alloc_cpu.cpp:117] {_CPU_ALLOCATION_FAILED}: you tried to allocate "
                               "549756338176 bytes (injected by TEBENCH_TEST_FAULT)")
        if case.parallel != "single":
            from tebench.worker.distributed import run_distributed

            measured = run_distributed(case, device, _Progress(args.progress and rank == 0, channel))
        else:
            from tebench.worker.case import run_case

            measured = run_case(case, device, _Progress(args.progress, channel))
        measured.device, measured.launch = payload.device, payload.launch
        payload = measured
        payload.phases = payload.phases or Phases()
        payload.phases.startup_s = startup_s
        if fault == "diverge":
            assert payload.loss is not None, "a case that ran has its losses"
            payload.loss.per_step[-1] = float("nan")
        payload.status = "ok"
    except (torch.OutOfMemoryError, MemoryError) as exc:
        traceback.print_exc()
        payload.status, payload.reason = "oom", f"{type(exc).__name__}: {str(exc).splitlines()[0][:500]}"
        if device.type == "cuda":
            payload.memory = Memory(kind="cuda", peak_allocated_bytes=torch.cuda.max_memory_allocated(device),
                                    peak_reserved_bytes=torch.cuda.max_memory_reserved(device))
    except Exception as exc:
        # The whole traceback, a user workload's frames and its own exception behind a PluginError
        # included, goes to stderr: the case's log.
        traceback.print_exc()
        first = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ""
        # torch's CPU allocator fails with a plain RuntimeError, not OutOfMemoryError: the same fault.
        payload.status = "oom" if _CPU_ALLOCATION_FAILED in str(exc) else "failed"
        payload.reason = failure_reason(case.workload, exc) or f"{type(exc).__name__}: {first}"
    # The case id echoed back beside the measurements: the runner checks that a result file is of the case
    # it launched (file names that once collided mixed two cases' results up).
    code = _deliver(result_path, {"case_id": case.id, **payload.to_dict()}) if rank == 0 else 0
    sys.stdout.flush()
    sys.stderr.flush()
    return code

