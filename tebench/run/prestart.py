"""Pre-started workers: started while the previous case runs, stopped beside launch-bound timed steps."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from tebench.plan.modes import MODES
from tebench.plan.schedule import Planned

if TYPE_CHECKING:  # the type only: --help builds the parser without pydantic
    from tebench.schema.records import Case


# Below this warm-up step time a case is taken to be launch-bound: its timed steps pace on the host
# CPU, and pre-started workers are stopped while they run. H200, 2026-11-30, depth 2: launch-bound
# TE-BF16 cases of 5-23 ms a step had medians 10-35% higher with the workers importing beside them
# than stopped, while cases of 90-300 ms (d2048, d4096) matched cold starts within 0.7% with the
# workers running (reports/h200-harness-cost/).
PAUSE_BELOW_MS = 50.0


def launch_bound(step_ms: float | None) -> bool:
    """Whether a case whose warm-up steps took ``step_ms`` (None: unknown) is timed with workers stopped."""
    return step_ms is None or step_ms < PAUSE_BELOW_MS


@dataclass
class Spare:
    """A pre-started worker: imports done (or under way), waiting for one case on stdin."""

    proc: subprocess.Popen
    family: str
    log: Path
    channel: int | None
    """Where its protocol lines arrive (tebench.schema.protocol); None once a case's pump owns it."""
    on_stdout: bool = False
    """Whether ``channel`` is its stdout (a worker of a tebench from before the protocol pipe)."""
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
        if self.stopped_at is None:
            self.stopped_at = now
        else:
            self.paused_s += now - self.stopped_at
            self.stopped_at = None

    def close_channel(self) -> None:
        """Close its end of the protocol channel, if it still holds it (a worker no case will use)."""
        if self.channel is not None:
            with contextlib.suppress(OSError):
                os.close(self.channel)
            self.channel = None


def preload_for(case: Case) -> str:
    """What a pre-started worker imports for ``case`` (``python -m tebench.worker.main --preload``)."""
    return "te" if MODES[case.mode].family == "te" else "torch"


def upcoming_cases(planned: Iterable[Planned], limit: int = 8) -> list[Case]:
    """The next single-process cases that will run (skips and torchrun cases take no pre-started worker).

    ``planned`` is read only as far as needed, so callers pass a lazy view of what is left: this
    runs before every case, and a copy of the rest of a long run (``--rounds``) each time was
    quadratic in its length.
    """
    return [q.case for q in itertools.islice((q for q in planned if not q.skip and q.case.parallel == "single"),
                                             limit)]


# How the runner starts a worker (tebench.run.runner.RunOptions.launch).
LAUNCHES = ("auto", "prestarted", "cold")
# Pre-started workers per device (tebench.run.runner.RunOptions.prestart_depth) when not given:
# one per this many usable CPUs (cpus.usable_cpus) a device has to itself, between 1 and
# MAX_AUTO_PRESTART_DEPTH.
CPUS_PER_PRESTARTED_WORKER = 4
MAX_AUTO_PRESTART_DEPTH = 4


def default_prestart_depth(devices: int = 1, cpus: int | None = None) -> int:
    """How many upcoming cases per device get a pre-started worker when the user does not say.

    A worker's imports (torch, TE, torch.compile's machinery) take 6-15 s of one core, and
    they stand stopped while launch-bound cases are timed, so on a short-case stretch of the
    nightly two workers fell behind. On the H200 host (16 CPUs, one GPU, 2026-12-01) four
    instead of two cut the waits for imports from 31 s to 10 s and case time by 18% on the
    GPT tutorial cases, and from 24 s to 11 s (26%) on the distillation ones; the launch-bound
    medians moved both ways, mostly down (reports/h200-harness-cost/depth-*.jsonl). Fewer CPUs
    get fewer workers, so that imports do not crowd the case being timed.
    """
    if cpus is None:
        from tebench.cpus import usable_cpus  # the runner's question: a case's worker never asks it

        cpus = usable_cpus()
    share = cpus // (CPUS_PER_PRESTARTED_WORKER * max(1, devices))
    return max(1, min(MAX_AUTO_PRESTART_DEPTH, share))
