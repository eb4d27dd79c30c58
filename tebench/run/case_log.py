"""A case's log file (``OUT/logs/<case>.log``): appending to it, and reading its tail back."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

LOG_TAIL_LINES = 25


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def write_log(log: Any, text: str) -> None:
    # A case's log is a convenience: a full disk must not turn a measured
    # case into a crash here (the result and the record are what count).
    with contextlib.suppress(OSError, ValueError):
        log.write(text)


def append_prestart_log(log: Any, path: Path) -> None:
    """What a pre-started worker printed while importing (TE's warnings, say) goes to the case's log."""
    try:
        text = path.read_text(errors="replace")
        path.unlink()
    except OSError:
        return
    if text.strip():
        write_log(log, "# written by the worker before its case arrived (imports):\n" + text)
