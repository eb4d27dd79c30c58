"""Bad usage (:class:`UsageError`, exit 2), the command line as typed, and checks of single option values."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from typing import Any

from tebench.errors import TebenchError


class UsageError(TebenchError):
    """Bad input: reported on stderr, exit status 2."""


# ASCII only: str.isdigit() (and \d) accept '²' or '٣', which no CUDA_VISIBLE_DEVICES names.
# At most 9 digits: no machine has more GPUs, and int() refuses past 4,300 digits.
_DEVICE_INDEX = re.compile(r"[0-9]{1,9}")


def _plain(text: str) -> str:
    # int() and float() take "１０", " 10", "1_0": each read as a number the user did not write as one.
    if not text.isascii() or "_" in text or text != text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: write the number in ASCII digits (0-9), without spaces or "
                                         "underscores")
    return text


def integer(text: str) -> int:
    """An option's whole number (argparse ``type=``), ASCII only."""
    try:
        return int(_plain(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a whole number") from None


def number(text: str) -> float:
    """An option's number (argparse ``type=``), ASCII only."""
    try:
        return float(_plain(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None


def open_fraction(text: str) -> float:
    """An option's number strictly between 0 and 1 (argparse ``type=``: a probability such as ``--alpha``), refused
    with what was typed: 0.9999999999999999999 is 1.0 once it is a float."""
    value = number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be between 0 and 1, both excluded (0.05 is usual)")
    return value


def command_line() -> str:
    """This command as typed, for the holder line of a lock and the record of a run."""
    return shlex.join(["tebench", *sys.argv[1:]])


def parse_devices(value: str | None, flag: str = "--devices") -> list[str] | None:
    """``--devices 0,1``: distinct plain ASCII device indices (normalised: ``00`` is ``0``), or None."""
    if value is None:
        return None
    items = [d.strip() for d in value.split(",")]
    bad = [d for d in items if not _DEVICE_INDEX.fullmatch(d)]
    if bad:
        raise UsageError(f"{flag} {value}: expected comma-separated GPU indices, e.g. 0,1 "
                         f"({', '.join(repr(d) for d in bad)}: not a device index 0, 1, ...)")
    indices = [str(int(d)) for d in items]
    twice = sorted({d for d in indices if indices.count(d) > 1}, key=int)
    if twice:
        raise UsageError(f"{flag} {value}: GPU {', '.join(twice)} given more than once "
                         "(each device runs one case at a time)")
    return indices


def nonempty(flag: str, give: str = "a name (e.g. smoke) or leave the option out") -> Any:
    """An argparse type refusing an empty or blank value (exit 2 naming ``flag``): ``--preset ''``
    must not fall back to the default, which probes the machine and runs the auto preset, ``--shard ''`` must
    not run every case, and ``--db ''`` must not name the working directory. ``give``: what to give instead."""
    def check(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"{flag} {value!r}: empty; give {give}")
        return value

    check.__name__ = flag.lstrip("-")  # argparse names the type in its message
    return check
