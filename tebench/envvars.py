"""The ``TEBENCH_*`` environment variables that hold a number, parsed in one place.

Each is read by :func:`number` (or :func:`integer`) with its name, its allowed range and what unset
means; a value that is not a number, is not finite or is out of range is an :class:`EnvError` that
names the variable, the range and the value (the CLI's exit 2, a worker's failed case), never a bare
``could not convert string to float`` nor a refusal blamed on something else (a plugin that "cannot
be imported" because its time limit overflowed the timer). A leaf module: the parent and the worker
import it.
"""

from __future__ import annotations

import math
import os
from typing import Mapping

from tebench.errors import RunError

PLUGIN_IMPORT_TIMEOUT = "TEBENCH_PLUGIN_IMPORT_TIMEOUT"
REPORT_PROCESSES = "TEBENCH_REPORT_PROCESSES"
TEST_SLOWDOWN = "TEBENCH_TEST_SLOWDOWN"
TEST_STEP_SLEEP_MS = "TEBENCH_TEST_STEP_SLEEP_MS"
PARENT_PID = "TEBENCH_PARENT_PID"

MAX_TEXT = 64
"""Longest value read as a number (characters): a 5,000-digit value is refused before int() or float()
spend time on it; the message quotes at most this much of it."""


class EnvError(RunError):
    """A ``TEBENCH_*`` variable whose value cannot be used (exit status 2); the message names it."""

    def __init__(self, name: str, raw: str, expected: str):
        shown = raw if len(raw) <= MAX_TEXT else raw[:MAX_TEXT] + "..."
        super().__init__(f"environment variable {name}={shown!r}: expected {expected}")
        self.name, self.raw = name, raw


def _span(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"from {lo:g} to {hi:g}"
    if lo is not None:
        return f"at least {lo:g}"
    return f"at most {hi:g}" if hi is not None else "any finite number"


def number(name: str, default: float | None, lo: float | None = None, hi: float | None = None,
           environ: Mapping[str, str] | None = None, what: str = "a number") -> float | None:
    """The finite number in ``name`` (``default`` when unset or blank), within ``lo`` … ``hi``; else EnvError."""
    raw = (os.environ if environ is None else environ).get(name, "")
    text = raw.strip()
    if not text:
        return default
    expected = f"{what} {_span(lo, hi)}"
    if len(text) > MAX_TEXT or not text.isascii():
        raise EnvError(name, raw, expected)
    try:
        value = float(text)
    except ValueError:
        raise EnvError(name, raw, expected) from None
    if not math.isfinite(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise EnvError(name, raw, expected)
    return value


def integer(name: str, default: int | None, lo: int | None = None, hi: int | None = None,
            environ: Mapping[str, str] | None = None, what: str = "an integer") -> int | None:
    """The decimal integer in ``name`` (``default`` when unset or blank), within ``lo`` … ``hi``; else EnvError."""
    raw = (os.environ if environ is None else environ).get(name, "")
    text = raw.strip()
    if not text:
        return default
    expected = f"{what} {_span(lo, hi)}"
    # isascii: str.isdigit() accepts '²', which int() refuses.
    digits = text[1:] if text[:1] in "+-" else text
    if len(text) > MAX_TEXT or not (text.isascii() and digits.isdigit()):
        raise EnvError(name, raw, expected)
    value = int(text)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise EnvError(name, raw, expected)
    return value


# The variables, each read here with its range: one line a caller uses.

IMPORT_LIMIT_MAX_S = 86400.0
"""The longest plugin import limit (a day): a larger one (1e300) overflowed the interval timer."""


def plugin_import_timeout(default: float) -> float:
    """``TEBENCH_PLUGIN_IMPORT_TIMEOUT``: seconds a plugin's import may take, 0 for no limit."""
    value = number(PLUGIN_IMPORT_TIMEOUT, default, 0.0, IMPORT_LIMIT_MAX_S, what="seconds")
    assert value is not None
    return value


def report_processes() -> int | None:
    """``TEBENCH_REPORT_PROCESSES``: how many processes draw a report's figures (None: the default).

    A value that is not a plain count (``²``, ``4.5``, 5,000 digits, 0) means the default, as documented:
    the number of drawing processes changes no output, so it is no reason to stop a report."""
    try:
        return integer(REPORT_PROCESSES, None, 1, 999_999)
    except EnvError:
        return None


def slowdown_factor() -> float | None:
    """``TEBENCH_TEST_SLOWDOWN``: the factor every timed step is stretched by (a test hook), None when unset."""
    return number(TEST_SLOWDOWN, None, 1.0, 1000.0, what="a factor (e.g. 1.05)")


def step_sleep_ms() -> float:
    """``TEBENCH_TEST_STEP_SLEEP_MS``: milliseconds slept in every timed step (a test hook), 0 when unset."""
    value = number(TEST_STEP_SLEEP_MS, 0.0, 0.0, 3_600_000.0, what="milliseconds")
    assert value is not None
    return value


def parent_pid() -> int:
    """``TEBENCH_PARENT_PID``: the runner a worker watches (0 when unset: none)."""
    value = integer(PARENT_PID, 0, 0, 2**31 - 1, what="a process id")
    assert value is not None
    return value
