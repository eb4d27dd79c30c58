"""What a command writes: its text to ``--out`` or stdout (and the GitHub step summary), strict JSON."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

from tebench.errors import OutputPathError

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
"""The variable naming the file a GitHub Actions step appends its Markdown summary to."""

_NOT_REGULAR = "the step summary is appended only to a regular file or a new path, never to a special file"


def step_summary() -> Path | None:
    """The file :data:`STEP_SUMMARY` names (its symbolic links followed), or None when it is unset or empty.

    OutputPathError, naming the variable, for a directory, a FIFO, a device or a socket: appending
    to a FIFO would block the command until something reads it, and a device is no summary; and for a file
    that holds tebench's measurements (a results file, a history database), which Markdown would damage. Checked
    with ``stat`` (which never blocks) before a regular file's first bytes are read, so a command can refuse it
    before its work.
    """
    from tebench.cli.paths import measured_data
    from tebench.store import atomic  # light: no pandas, no numpy

    value = os.environ.get(STEP_SUMMARY)
    if not value:
        return None
    try:
        path = atomic.target(value)
    except IsADirectoryError:
        raise OutputPathError(f"{STEP_SUMMARY}={value}: is a directory; {_NOT_REGULAR}") from None
    except OutputPathError as exc:
        raise OutputPathError(f"{STEP_SUMMARY}={exc}") from None
    except OSError as exc:  # a file where a directory is expected, a loop of links: said about the variable
        raise OutputPathError(f"{STEP_SUMMARY}={value}: {exc.strerror or exc}") from None
    held = measured_data(path)
    if held:  # Markdown appended to a results file or a database would damage it
        raise OutputPathError(f"{STEP_SUMMARY}={value}: is {held}; the step summary is never appended to it")
    return path


def append_step_summary(path: Path, text: str) -> None:
    """Append ``text`` and a newline to the step summary ``path`` (from :func:`step_summary`).

    Opened without blocking and checked again on the open descriptor: a FIFO or a device put in its
    place since the check is refused (OutputPathError naming the variable), never waited on.
    """
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO that nothing reads: opening it to write would have blocked
            raise OutputPathError(f"{STEP_SUMMARY}={path}: a FIFO (named pipe); {_NOT_REGULAR}") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputPathError(f"{STEP_SUMMARY}={path}: not a regular file; {_NOT_REGULAR}")
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        fh.write(text + "\n")


def emit(text: str, out: str | None, markdown: bool) -> None:
    """``text`` to ``out`` (atomically) or stdout; Markdown is appended to the step summary too, when one is set.

    The step summary is checked before anything is written (:func:`step_summary`)."""
    summary = step_summary() if markdown else None
    if out:
        from tebench.store import atomic

        atomic.write_text(out, text + "\n")
    else:
        print(text)
    if summary is not None:
        append_step_summary(summary, text)


def strict_json(text: str) -> str:
    """Re-encode JSON text that may hold bare NaN/Infinity as strict JSON (null for them)."""
    from tebench.store.writer import dumps_strict

    return dumps_strict(json.loads(text), indent=2)
