"""``--threshold METRIC=VALUE``: a percentage or a fraction below 1, per metric, never guessed."""

from __future__ import annotations

import math
import re
from typing import Iterable

from tebench.analysis.defaults import DEFAULT_THRESHOLDS  # numpy-free: --help stays fast
from tebench.cli.usage import UsageError

_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")
_FRACTION = re.compile(r"^\s*(0|0?\.[0-9]+)\s*$")


def parse_threshold(item: str) -> tuple[str, float]:
    """``METRIC=VALUE`` with VALUE a percentage (``3%``) or a fraction below 1 (``0.03``).

    A bare number of 1 or more (``time=3``: 3% or 300%?) is refused, as are
    negative, NaN and infinite values: a threshold must not be guessed.
    """
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep:
        raise UsageError(f"--threshold {item!r}: expected METRIC=VALUE, e.g. time=5% or time=0.05")
    if key not in DEFAULT_THRESHOLDS:
        raise UsageError(f"--threshold {item!r}: unknown metric {key!r} (known: {', '.join(DEFAULT_THRESHOLDS)})")
    if m := _PERCENT.match(value):
        out = float(m.group(1)) / 100.0
    elif _FRACTION.match(value):
        out = float(value)
    else:
        raise UsageError(f"--threshold {item!r}: value {value!r} is not a percentage (5%) or a fraction "
                         f"below 1 (0.05): {_why_not(value)}")
    return key, out


def _why_not(value: str) -> str:
    """Why a threshold value is neither form, in the words that fit it."""
    if not value.isascii():
        return "write it in ASCII digits (0-9)"
    try:
        number = float(value.strip().rstrip("%"))
    except ValueError:
        return "not a number"
    if not math.isfinite(number):
        return "NaN and infinite values are refused"
    if number < 0:
        return "negative values are refused"
    if "e" in value.lower():
        return "exponent notation is not read; write the value out (0.001 or 0.1%)"
    return "a bare number of 1 or more is ambiguous (time=3: 3% or 300%?)"


def parse_thresholds(items: Iterable[str]) -> dict[str, float]:
    """Every ``--threshold`` item; a metric given twice is refused."""
    out: dict[str, float] = {}
    for item in items:
        key, value = parse_threshold(item)
        if key in out:
            raise UsageError(f"--threshold {item!r}: {key} given twice")
        out[key] = value
    return out


def thresholds(items: list[str]) -> dict[str, float]:
    """Every ``--threshold METRIC=VALUE`` item (``compare``, ``ab``, ``history``); UsageError for a bad one."""
    return parse_thresholds(items)
