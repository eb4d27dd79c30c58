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
import os
import queue
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, TYPE_CHECKING
import tebench
from tebench.run import caches, final_verdicts
from tebench.store import reader as results
from tebench.store.writer import Writer
from tebench.errors import RunError
from tebench.escape import for_terminal
from tebench.plan.matrix import Matrix, expand
from tebench.plan.schedule import Planned, plan, select_cases, selected_beyond_shard
from tebench.plan.shards import estimate_cost
from tebench.run.display import Display
from tebench.run.executor import Executor
from tebench.run.outdir import check_out_dir, keep_earlier_run, lock_out, storage_error
from tebench.run.options import RunOptions, launch_method, resolve_options
from tebench.run.prestart import upcoming_cases
from tebench.run.resume import resume_state
from tebench.schema.records import CaseResult, RunHeader

if TYPE_CHECKING:  # the type only: --help builds the parser without pydantic
    from tebench.schema.records import Case
    from tebench.schema.environment import Environment


def run(matrix: Matrix, env: Environment, opts: RunOptions,
        on_record: Callable[[CaseResult], None] | None = None) -> Path:
    """Run a matrix into ``opts.out``; returns the results file's path.

    OUT is locked for the whole run (a second writer gets RunError); a storage
    failure stops the run with StorageError and loses no finished case.
    """
    _cases(matrix, opts)  # refused before OUT is created
    check_out_dir(opts.out)
    with lock_out(opts.out, " ".join(opts.command) or "tebench run"):
        return run_locked(matrix, env, opts, on_record)


def run_locked(matrix: Matrix, env: Environment, opts: RunOptions,
               on_record: Callable[[CaseResult], None] | None = None) -> Path:
    """:func:`run` for a caller that holds OUT's lock itself (``tebench run`` holds it from before
    the probe until its report is written, so no other command writes OUT in between)."""
    return _run_locked(matrix, env, resolve_options(opts), _cases(matrix, opts), on_record)


def _cases(matrix: Matrix, opts: RunOptions) -> list[Case]:
    cases = select_cases(matrix, opts.only, opts.shard)
    if not cases and not selected_beyond_shard(matrix, opts.only, opts.shard):
        raise RunError("no case of the matrix matches --only / --shard")
    return cases


def run_header(run_id: str, matrix: Matrix, cases: list[Case], env: Environment, opts: RunOptions,
               resumed: bool) -> RunHeader:
    """The header record a run writes first: its identity, matrix, cases, options and environment."""
    launch = launch_method(opts.launch, env)
    # From an object: the header keeps these keys in this order, the nulls included.
    return RunHeader.from_dict({
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
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "env": env.to_dict(),
    })


def _run_locked(matrix: Matrix, env: Environment, opts: RunOptions, cases: list[Case],
                on_record: Callable[[CaseResult], None] | None) -> Path:
    path = opts.out / results.RESULTS_NAME
    packed = opts.out / results.PACKED_NAME
    planned = plan(cases, env, opts.rounds)
    done: set[tuple[str, int]] = set()
    previous: list[CaseResult] = []
    held = path.exists() and path.stat().st_size > 0
    if opts.resume and not held and packed.exists():
        # A run goes on by appending to its results file, which a compressed one is not: starting anew here
        # would run its recorded cases again under a new run id.
        raise RunError(f"--resume: {opts.out} holds its results compressed ({packed}); a run is continued by "
                       f"appending to {path}: gunzip it first (gunzip {packed}), then --resume")
    if held and opts.resume:
        run_id, done, previous = resume_state(path, matrix, opts, [c.id for c in cases])
    else:
        if held or packed.exists():  # a finished run: kept, and this one written beside it
            kept = keep_earlier_run(opts.out)
            sys.stderr.write(f"kept the earlier run of {for_terminal(opts.out)} in {for_terminal(kept)}; "
                             f"this run writes {for_terminal(path)}\n")
        elif opts.resume:
            # Said, as a typo in --out would otherwise turn a resume into a whole new run without a word (a nightly
            # script that always passes --resume starts its first night this way, on purpose).
            sys.stderr.write(f"--resume: no run to continue in {for_terminal(opts.out)} (no {results.RESULTS_NAME} "
                             "there yet); starting a new run\n")
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    todo = [p for p in planned if (p.case.id, p.round) not in done]
    # Resumed: it continues the run id above it, even where that run recorded no case yet (an empty shard, a run
    # killed before its first case finished).
    header = run_header(run_id, matrix, cases, env, opts, resumed=bool(held and opts.resume))
    try:  # the CLI checked it; a caller of run() may not have
        caches.prepare(opts.compile_cache)
    except OSError as exc:
        raise RunError(f"--compile-cache {opts.compile_cache}: cannot create it ({exc.strerror})") from None
    # Relative costs weigh each case's share of the run, so what is left is estimated from the pace so far.
    costs = {(p.case.id, p.round): 0.0 if p.skip else estimate_cost(p.case) for p in todo}
    display = Display(len(todo), opts.live, rounds=opts.rounds, costs=costs)
    if done:
        sys.stderr.write(f"resuming run {for_terminal(run_id)}: {len(done)} case-round(s) already recorded, {len(todo)} to go\n")
    try:
        writer = Writer(path)
        writer.append(header)
    except OSError as exc:
        raise storage_error(f"cannot write {path}", exc, opts.out) from None
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
    final_verdicts.write_at_end(path)
    with contextlib.suppress(OSError):
        (opts.out / ".work").rmdir()  # only if empty
    return path


def _execute(ex: Executor, todo: list[Planned], devices: list[str] | None,
             on_record: Callable[[CaseResult], None] | None) -> None:
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
