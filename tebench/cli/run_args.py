"""The options of ``run`` and ``ab`` that say how each case is run: how its process starts
(``--launch``, ``--prestart-depth``, ``--no-pause``), its compile caches and its ``--timeout``."""

from __future__ import annotations

import argparse
from pathlib import Path

from tebench.cli.usage import UsageError, integer, nonempty


def add_cost_args(p: argparse.ArgumentParser) -> None:
    """What the harness itself costs on the machine: process starts and compile caches."""
    # A light module: --help stays fast.
    from tebench.run.prestart import CPUS_PER_PRESTARTED_WORKER, LAUNCHES, MAX_AUTO_PRESTART_DEPTH

    p.add_argument("--launch", choices=LAUNCHES, default="auto",
                   help="how each case's process starts: prestarted (its worker imports torch/TE while the "
                        "previous case runs; one process per case still), cold, or auto (default: prestarted "
                        "on CUDA machines, cold on CPU-only ones)")
    p.add_argument("--prestart-depth", type=integer, default=None, metavar="N",
                   help=f"with prestarted launches, start the workers of the next N cases per device, 1 to 8 "
                        f"(default: one per {CPUS_PER_PRESTARTED_WORKER} usable CPUs per device, 1 to "
                        f"{MAX_AUTO_PRESTART_DEPTH}; 4 on a 16-CPU host with one GPU; the header records it)")
    p.add_argument("--no-pause", action="store_true",
                   help="let pre-started workers run during the timed steps of launch-bound cases (by default "
                        "they are stopped then, so their imports take no host CPU from the case being timed)")
    p.add_argument("--compile-cache", default="default", metavar="DIR",
                   type=nonempty("--compile-cache", "a directory, 'default' or 'off'"),
                   help="directory of the torch.compile/Triton/CUDA JIT caches every case shares, kept across "
                        "runs (CI can cache it); 'default' is $TEBENCH_CACHE_DIR/compile (~/.cache/tebench/compile), "
                        "'off' leaves torch's defaults. The header records whether it started cold or warm")


def check_launch_args(args: argparse.Namespace) -> int | None:
    """``--prestart-depth`` and ``--no-pause`` against ``--launch``; returns the depth (None: the default)."""
    value = args.prestart_depth
    if value is not None and not 1 <= value <= 8:
        raise UsageError(f"--prestart-depth {value}: expected 1 to 8 (pre-started workers per device)")
    if args.launch == "cold" and (value is not None or args.no_pause):
        given = f"--prestart-depth {value}" if value is not None else "--no-pause"
        raise UsageError(f"{given} applies to pre-started workers; --launch cold starts none")
    return value


def compile_cache_dir(value: str) -> Path | None:
    """``--compile-cache``: a directory (created now: a cache that cannot be is bad input), ``default``
    ($TEBENCH_CACHE_DIR/compile, by default ~/.cache/tebench/compile) or ``off``."""
    if value == "off":
        return None
    from tebench.run import caches

    path = caches.default_dir() if value == "default" else Path(value).expanduser()
    given = f"--compile-cache {value}"
    if value == "default":  # the user named no folder: say where this one came from, and the way out
        given = f"--compile-cache default (under {caches.default_source()}; --compile-cache off runs without)"
    if path.exists() and not path.is_dir():  # mkdir says "File exists" of it
        raise UsageError(f"{given}: {path} is a file, not a directory")
    from tebench.store.atomic import dangling_link

    nowhere = dangling_link(path)
    if nowhere:
        raise UsageError(f"{given}: {nowhere}")
    try:
        caches.prepare(path)
    except OSError as exc:
        raise UsageError(f"{given}: cannot create {path} ({exc.strerror})") from None
    return path


def check_timeout(value: float | None) -> None:
    """``--timeout``: UsageError unless within the limits of a matrix file's ``timeout_s``."""
    if value is None:
        return
    from tebench.schema.settings import Settings
    from tebench.schema.knobs import FieldError, check_value

    try:
        check_value(Settings, "timeout_s", value)
    except FieldError as exc:
        raise UsageError(f"--timeout {value}: {exc} (seconds)") from None


def check_test_faults() -> None:
    """UsageError for a ``TEBENCH_TEST_FAULT`` the worker would not understand: refused before any case runs, where
    a typo made every worker fail with a traceback and the run end with exit 0."""
    from tebench.plan import faults

    try:
        faults.check()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
