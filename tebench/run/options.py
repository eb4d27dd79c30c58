"""How a run executes: the options of ``tebench run`` (and of each side of ``tebench ab``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from tebench.run.prestart import default_prestart_depth

if TYPE_CHECKING:  # the type only: --help builds the parser without pydantic
    from tebench.schema.environment import Environment

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
    """Directory of the compile caches every case shares (see :mod:`tebench.run.caches`); None: torch's defaults."""
    prestart_depth: int | None = None
    """With prestarted launches, how many upcoming cases per device have their worker started;
    None: :func:`tebench.run.prestart.default_prestart_depth` for this host and these devices (see
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
