"""The guard around every command: streams that cannot crash, signals as exit codes, and a crash
that is reported in one line with its traceback kept in a log file.

An operator runs tebench unattended: a traceback on a terminal nobody watches is lost, and an
exit status of 0, 1 or 2 would be read as success, a regression or bad input. So an exception
no command expected exits with :data:`EXIT_INTERNAL`, names the command, its input and the
exception, and says where the traceback was written.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

from tebench.cli.exit_codes import EXIT_INTERNAL

INPUT_ARGS = ("matrix", "preset", "results", "base", "head", "shards", "db")
"""The arguments that name a command's input, in the order the crash line quotes them."""

CRASH_PREFIX = "tebench-crash-"


class Terminated(KeyboardInterrupt):
    """A termination signal (SIGTERM, SIGHUP), raised where KeyboardInterrupt is, so every cleanup
    that SIGINT runs today (workers killed, the lock released, "continue with --resume") runs too."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_INSTALLED_IN: list[int] = []
"""The pid that installed the handlers: a forked child (the report's drawing pool) inherits them."""


_RECEIVED: list[int] = []
"""The signals that ended (or are ending) the command, in the order they came: whatever a library
makes of the exception they raise (a reader that turns it into "bad input", a cleanup whose own
error replaces it), the command's exit status is 128+N (:func:`interrupted`)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    if os.getpid() not in _INSTALLED_IN:
        # A forked helper (multiprocessing's pool, ended by SIGTERM when its work is done) dies as
        # it did before the guard: by the signal, quietly, leaving cleanup to its parent.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    _RECEIVED.append(signum)
    raise Terminated(signum)


def _raise_interrupt(signum: int, frame: Any) -> None:
    """SIGINT as Python's own handler takes it (KeyboardInterrupt), remembered for :func:`interrupted`."""
    if os.getpid() not in _INSTALLED_IN:
        signal.default_int_handler(signum, frame)
    _RECEIVED.append(signum)
    raise KeyboardInterrupt


def interrupted(exc: BaseException | None = None) -> int | None:
    """128+N when the command is ending because of signal N, else None.

    A signal came while the command ran (its handler remembered it), or ``exc`` is, or was raised
    while handling, a KeyboardInterrupt (Ctrl-C, :class:`Terminated`): a command whose reading code
    turned the interrupt into another error still exits 128+N, never 2 (bad input) or 70.
    """
    if _RECEIVED:
        return 128 + _RECEIVED[0]
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return signal_exit(exc)
        exc = exc.__cause__ or exc.__context__
    return None


def install_signals() -> dict[int, Any]:
    """SIGTERM and SIGHUP end the command like SIGINT does (cleanup, then exit 128+N).

    Returns the handlers replaced, for :func:`restore_signals` (a caller of ``main`` in-process, a
    test, gets its own back). Only from the main thread (signal.signal refuses elsewhere).
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    _INSTALLED_IN[:] = [os.getpid()]
    _RECEIVED.clear()
    replaced: dict[int, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:  # an ignored SIGHUP (nohup) stays ignored
            replaced[sig] = signal.signal(sig, _raise_terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # an ignored SIGINT stays ignored
        replaced[signal.SIGINT] = signal.signal(signal.SIGINT, _raise_interrupt)
    return replaced


def restore_signals(replaced: dict[int, Any]) -> None:
    """Put back the handlers :func:`install_signals` replaced."""
    for sig, handler in replaced.items():
        signal.signal(sig, handler)
    _RECEIVED.clear()


def signal_exit(exc: KeyboardInterrupt) -> int:
    """The shell's convention for a command ended by a signal: 128 + its number (SIGINT: 130)."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


def safe_streams() -> None:
    """Make stdout and stderr escape what their encoding cannot print instead of raising.

    ``PYTHONIOENCODING=ascii``, ``LC_ALL=C`` on an old Python or a latin-1 terminal would otherwise
    end a command at its first emoji or non-Latin case name.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # absent on a replaced stream (a test's StringIO)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream: nothing to protect
                pass


def tolerate_warning_errors() -> None:
    """Show warnings that ``PYTHONWARNINGS=error`` (or ``-W error``) would raise as exceptions.

    tebench's warnings are messages for the operator (a skipped damaged line, an ``--only`` glob that
    matched nothing) and a library's deprecation notice is no reason to stop a nightly run: an
    environment-wide setting meant for code under development must not change what a command does.
    Every ``error`` filter is shadowed by a ``default`` one with the same match; other filters stay.
    """
    for action, message, category, module, lineno in list(warnings.filters):
        if action == "error":
            # warnings.filterwarnings stores one class; the tuple its type admits comes only from a hand-made filter.
            for each in category if isinstance(category, tuple) else (category,):
                warnings.filterwarnings("default", message=_pattern_text(message), category=each,
                                        module=_pattern_text(module), lineno=lineno)


def _pattern_text(pattern: re.Pattern[str] | str | None) -> str:
    """The text of a warning filter's compiled pattern (a filter stores None for "match all")."""
    return pattern.pattern if isinstance(pattern, re.Pattern) else pattern or ""


def describe_input(args: argparse.Namespace) -> str:
    """The input a command was given, as the crash line quotes it (at most ~200 characters)."""
    parts = []
    for name in INPUT_ARGS:
        value = getattr(args, name, None)
        if value:
            shown = " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
            parts.append(f"--{name} {shown}" if name in ("preset", "db") else shown)
    text = " ".join(parts) or "no input file"
    return text if len(text) <= 200 else text[:197] + "..."


def _log_dirs(args: argparse.Namespace) -> list[Path]:
    out = getattr(args, "out", None)
    dirs = [Path(out)] if out and Path(out).is_dir() else []
    return dirs + [Path(tempfile.gettempdir())]


def write_crash_log(args: argparse.Namespace, exc: BaseException) -> Path | None:
    """Write the traceback of ``exc`` with the command line; the file's path, or None when no
    directory (OUT, then the temporary directory) could take it."""
    text = (f"tebench {getattr(args, 'command', '?')} crashed at {time.strftime('%Y-%m-%d %H:%M:%S %z')}\n"
            f"argv: {sys.argv!r}\npython: {sys.version.split()[0]}\n\n"
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for directory in _log_dirs(args):
        try:
            fd, name = tempfile.mkstemp(prefix=f"{CRASH_PREFIX}{stamp}-", suffix=".log", dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
                fh.write(text)
            return Path(name)
        except OSError:
            continue
    return None


def report_crash(args: argparse.Namespace, exc: BaseException) -> int:
    """One line on stderr naming the command, its input and the exception; the traceback to a log
    file (or, when none can be written, to stderr after that line). Returns :data:`EXIT_INTERNAL`."""
    from tebench.escape import for_terminal

    command = getattr(args, "command", "?")
    what = f"{type(exc).__name__}: {exc}"
    what = what if len(what) <= 300 else what[:297] + "..."
    log = write_crash_log(args, exc)
    where = f"the traceback is in {log}" if log else "no log file could be written; the traceback follows"
    print(f"tebench {command}: internal error on {for_terminal(describe_input(args))}: {for_terminal(what)}; "
          f"{for_terminal(where)} (exit {EXIT_INTERNAL}: a tebench bug, please report it with that file)",
          file=sys.stderr)
    if log is None:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    return EXIT_INTERNAL
