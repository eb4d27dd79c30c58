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
        if not math.isfinite(out):  # hundreds of digits: float() gives inf
            raise UsageError(f"--threshold {item!r}: value {value!r} is too large a percentage")
    elif _FRACTION.match(value):
        out = float(value)
    else:
        raise UsageError(f"--threshold {item!r}: value {value!r} is not a percentage (5%) or a fraction "
                         f"below 1 (0.05): {_why_not(value)}")
    return key, out


def _why_not(value: str) -> str:
    """Why a threshold value is neither form, in the words that fit it."""
    text = value.strip()
    if not text.isascii():
        return "write it in ASCII digits (0-9)"
    bare = text[:-1].rstrip() if text.endswith("%") else text
    if text.count("%") > 1:
        return "one % sign, after the number"
    if "e" in bare.lower() and bare.lower() not in ("inf", "infinity", "nan"):
        return "exponent notation is not read; write the value out (0.001 or 0.1%)"
    try:
        number = float(bare)
    except ValueError:
        return "not a number"
    if not math.isfinite(number):
        return "NaN and infinite values are refused"
    if bare.startswith("-"):
        return "negative values are refused" if number else "a sign is not read (write 0%)"
    if bare.startswith("+"):
        return "a sign is not read (write 5% or 0.05)"
    if bare.endswith("."):
        return "the number must end in a digit (0.5, not 0.)"
    if re.match(r"0[0-9]", bare):
        return "leading zeros are not read (0.05, not 00.05)"
    if number >= 1 and not text.endswith("%"):
        return "a bare number of 1 or more is ambiguous (time=3: 3% or 300%?)"
    return "write a percentage (5%) or a fraction below 1 (0.05)"


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
