"""``tebench ab``: base and head run interleaved on one device, then compared round by round.

Two runs made at different times differ by more than their code: the machine's
state, other load, clocks, another day (the same code moved up to +36% between
two runs on a 2-core CPU). ``ab`` runs both sides in one invocation, case by
case, in the order A B | B A | A B ... (ABBA: each round swaps which side goes
first, so a slow drift of the machine cancels within each pair). Every
case-round is its own process, pinned to the same device. The two sides may
differ in environment: another Python (a second venv or checkout, hence another
torch, TE or tebench) and environment variables (``NVTE_*``, ``TORCH_*``).

Each side is a normal run directory (``DIR/base``, ``DIR/head``) whose header
carries an ``ab`` block; ``tebench compare`` recognises two sides of one ``ab``
run and pairs their rounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import contextlib
import os
import re
import subprocess
import sys
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import tebench
from tebench.analysis import compare
from tebench.plan import schedule as plan_schedule
from tebench.plan.environment import ProbeError, probe
from tebench.plan.matrix import Matrix
from tebench.report.compare_markdown import to_markdown
from tebench.run import final_verdicts, runner
from tebench.run.display import Display, SideDisplay
from tebench.run.executor import Executor
from tebench.schema.records import RunHeader, SideInfo
from tebench.run.options import RunOptions, resolve_options
from tebench.run.outdir import OutLock
from tebench.run.prestart import upcoming_cases
from tebench.analysis import judged_run
from tebench.store import atomic
from tebench.store import reader as results
from tebench.store.writer import Writer
from tebench.errors import TebenchError

if TYPE_CHECKING:  # the type only: --help builds the parser without pydantic
    from tebench.schema.environment import Environment

SIDES = ("base", "head")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ABError(TebenchError, ValueError):
    """Bad ``ab`` input (exit status 2)."""


@dataclass
class SideSpec:
    """How one side runs: its interpreter and extra environment variables."""

    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class ABOptions:
    """What ``tebench ab`` runs and where."""

    out: Path
    rounds: int = 5
    base: SideSpec = field(default_factory=SideSpec)
    head: SideSpec = field(default_factory=SideSpec)
    device: str | None = None
    """The CUDA device index both sides run on (None: the default device; CPU runs ignore it)."""
    only: list[str] = field(default_factory=list)
    timeout_s: float | None = None
    live: bool | None = None
    command: list[str] = field(default_factory=list)
    launch: str = "auto"
    """How each case's process starts (see ``RunOptions.launch``)."""
    prestart_depth: int | None = None
    """Pre-started workers per side; None: the machine's default (see ``RunOptions.prestart_depth``)."""
    pause: bool = True
    """Stop pre-started workers during timed steps (see ``RunOptions.pause``)."""
    compile_cache: Path | None = None
    """Compile caches both sides share (see ``RunOptions.compile_cache``)."""
    compare: compare.Options = field(default_factory=lambda: compare.Options(count_env_changes=True))


def parse_env(items: list[str], flag: str) -> dict[str, str]:
    """``K=V`` items into a dict; a malformed or repeated name is refused."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _ENV_NAME.match(key):
            raise ABError(f"{flag} {item!r}: expected NAME=VALUE with NAME a valid environment variable name")
        if key in out:
            raise ABError(f"{flag} {item!r}: {key} given twice")
        out[key] = value
    return out


def order(rounds: int) -> list[tuple[int, tuple[str, str]]]:
    """Each round with the order its sides run in: ABBA (base first in even rounds, head first in odd)."""
    return [(r, SIDES if r % 2 == 0 else SIDES[::-1]) for r in range(rounds)]


def schedule(case_ids: list[str], rounds: int) -> list[tuple[int, str, str]]:
    """(round, case id, side) in run order: round by round, case by case, the two sides back to back."""
    return [(r, c, s) for r, sides in order(rounds) for c in case_ids for s in sides]


def tebench_root(python: str) -> str | None:
    """Where ``python`` imports tebench from on its own (its venv or checkout), or None.

    ``-I`` keeps the caller's PYTHONPATH and working directory out of the answer.
    """
    code = "import os, tebench; print(os.path.dirname(os.path.dirname(os.path.abspath(tebench.__file__))))"
    try:
        proc = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout.strip() else None


def _check_python(python: str, flag: str) -> None:
    try:
        proc = subprocess.run([python, "-c", "import torch"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ABError(f"{flag} {python}: cannot run it ({exc})") from None
    if proc.returncode != 0:
        said = proc.stderr.strip().splitlines()
        # /bin/false exits 1 and says nothing: "cannot import torch ([])" named neither cause.
        raise ABError(f"{flag} {python}: cannot import torch ({said[-1]})" if said else
                      f"{flag} {python}: `{python} -c 'import torch'` exited with status {proc.returncode} and printed "
                      "nothing: is it a working Python interpreter?")


@dataclass
class _Side:
    name: str
    spec: SideSpec
    child_env: dict[str, str]
    root: str
    env: Environment
    out: Path
    run_id: str
    planned: dict[tuple[str, int], plan_schedule.Planned] = field(default_factory=dict)


def _prepare(name: str, spec: SideSpec, opts: ABOptions, ab_id: str) -> _Side:
    _check_python(spec.python, f"--{name}-python")
    # Each side runs the tebench its interpreter has (a second checkout's venv runs that checkout);
    # an interpreter without tebench runs this one. An explicit PYTHONPATH in --X-env wins.
    root = tebench_root(spec.python) or str(Path(tebench.__file__).resolve().parent.parent)
    inherited = os.environ.get("PYTHONPATH", "")
    child_env = {"PYTHONPATH": root + (os.pathsep + inherited if inherited else ""), **spec.env}
    probe_env = dict(child_env)
    if opts.device is not None:
        probe_env["CUDA_VISIBLE_DEVICES"] = opts.device
    # Detection runs with, and records, the side's variables (NVTE_*, TORCH_*, ...); this process's own
    # environment is not touched.
    try:
        env = probe(python=spec.python, extra_env=probe_env)
    except ProbeError as exc:  # name the side and its flag: two interpreters are in play
        raise ABError(f"--{name}-python {spec.python}: the {name} side's {exc}") from None
    out = opts.out / name
    if (out / results.RESULTS_NAME).exists():
        raise ABError(f"{out / results.RESULTS_NAME} already exists; choose another --out")
    return _Side(name, spec, child_env, root, env, out, f"{ab_id}-{name}")


def _run_options(s: _Side, opts: ABOptions) -> RunOptions:
    """The options of one side's run: the same as a `tebench run` on the one device would take."""
    ropts = RunOptions(out=s.out, rounds=opts.rounds, timeout_s=opts.timeout_s, only=opts.only,
                              python=s.spec.python, env=s.child_env, live=opts.live, command=opts.command,
                              devices=[opts.device] if opts.device is not None else None,
                              launch=opts.launch, compile_cache=opts.compile_cache,
                              prestart_depth=opts.prestart_depth, pause=opts.pause)
    return resolve_options(ropts)


def _header(s: _Side, matrix: Matrix, cases: list, ropts: RunOptions, opts: ABOptions,
            ab_id: str) -> RunHeader:
    # The same header as `tebench run` writes, plus the `ab` block that pairs the two sides.
    header = runner.run_header(s.run_id, matrix, cases, s.env, ropts, resumed=False)
    header.ab = SideInfo.from_dict({"id": ab_id, "side": s.name, "order": "ABBA", "python": s.spec.python,
                                    "tebench_root": s.root, "env": s.spec.env, "device": opts.device})
    return header


def _check_device(opts: ABOptions, sides: dict[str, _Side]) -> None:
    """ABError when ``--device`` names no GPU of a CUDA machine.

    Each side's probe sees only that device, so a wrong index looks like a
    machine without GPUs, and both sides would run on the CPU without a word.
    """
    if opts.device is None:
        return
    for s in sides.values():
        if s.env.device_type == "cuda":
            continue
        visible = probe(python=s.spec.python, cached=True, extra_env=s.child_env)
        if visible.device_type == "cuda":
            raise ABError(f"--device {opts.device}: no such GPU ({len(visible.gpus)} visible to --{s.name}-python)")
    if all(s.env.device_type != "cuda" for s in sides.values()):
        # As `tebench run --devices` says: a GPU index on a machine without one is ignored, and the user asked for it.
        warnings.warn(f"--device {opts.device}: this machine has no CUDA GPU; both sides run on the CPU", stacklevel=2)


def run(matrix: Matrix, opts: ABOptions) -> compare.Comparison:
    """Run both sides interleaved into ``opts.out/{base,head}`` and compare them; writes
    ``compare.md`` and ``compare.json`` next to them. Returns the comparison.

    ``opts.out`` and both side directories are locked (``OUT/.lock``) for the whole
    run, as ``tebench run`` locks its OUT: another command writing there is refused.
    """
    if opts.rounds < 1:
        raise ABError("--rounds must be at least 1")
    cases = plan_schedule.select_cases(matrix, opts.only)
    if not cases:
        raise ABError("no case of the matrix matches --only")
    ab_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    holder = " ".join(opts.command) or "tebench ab"
    with contextlib.ExitStack() as held:
        # An existing OUT is locked before the probes; a new one is created only once they passed.
        lock = held.enter_context(OutLock(opts.out, holder))
        sides = {name: _prepare(name, getattr(opts, name), opts, ab_id) for name in SIDES}
        _check_device(opts, sides)
        lock.hold()
        for s in sides.values():
            held.enter_context(OutLock(s.out, holder)).hold()
        return _run_sides(matrix, opts, cases, sides, ab_id)


def _run_sides(matrix: Matrix, opts: ABOptions, cases: list, sides: dict[str, _Side],
               ab_id: str) -> compare.Comparison:
    for s in sides.values():
        s.planned = {(p.case.id, p.round): p for p in plan_schedule.plan(cases, s.env, opts.rounds)}
    display = Display(2 * len(cases) * opts.rounds, opts.live)
    executors = {}
    with contextlib.ExitStack() as stack:
        for name, s in sides.items():
            writer = stack.enter_context(Writer(s.out / results.RESULTS_NAME))
            ropts = _run_options(s, opts)
            writer.append(_header(s, matrix, cases, ropts, opts, ab_id))
            executors[name] = Executor(ropts, s.env, s.run_id, writer, [], SideDisplay(display, name, opts.rounds))
        try:
            order = schedule([c.id for c in cases], opts.rounds)
            for i, (r, case_id, name) in enumerate(order):
                p = sides[name].planned[(case_id, r)]
                ex = executors[name]
                # The same side's next cases are pre-started while this one runs.
                later = (sides[n].planned[(c, q)] for q, c, n in (order[j] for j in range(i + 1, len(order)))
                         if n == name)
                ex.skip(p) if p.skip else ex.run_one(p, opts.device, upcoming_cases(later))
            for ex in executors.values():
                ex.close()
        except KeyboardInterrupt:
            for ex in executors.values():
                ex.kill_all()
            raise
    for s in sides.values():
        final_verdicts.write_at_end(s.out / results.RESULTS_NAME)
        with contextlib.suppress(OSError):
            (s.out / ".work").rmdir()
    result = compare.compare_runs(judged_run.read(sides["base"].out), judged_run.read(sides["head"].out), opts.compare,
                                  str(sides["base"].out), str(sides["head"].out))
    atomic.write_text(opts.out / "compare.md", to_markdown(result, title="tebench ab") + "\n")
    atomic.write_text(opts.out / "compare.json", result.to_json() + "\n")
    return result
