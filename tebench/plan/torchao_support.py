"""Which torchao releases tebench runs, and with which torch: the gate's table for the AO-FP8 mode.

torchao's releases follow torch's, and a mismatched pair fails in ways that look
like a slow or broken model rather than an error: its C++ extensions are skipped
with a warning, or the process aborts (torchao 0.13 on torch 2.9). So the gate
checks the installed *pair* against this table, and ``tebench env`` shows it.
Keep it in step with ``pyproject.toml``'s ``ao`` extra.
"""

from __future__ import annotations

import re

SUPPORTED_RANGE = ">=0.17,<0.19"
"""The torchao releases tebench is tested with (``pip install 'tebench[ao]'``)."""

MIN_TORCH: dict[tuple[int, int], tuple[int, int]] = {
    (0, 17): (2, 11),
    (0, 18): (2, 11),
}
"""torchao minor release -> the oldest torch minor release it supports (torchao's release notes)."""


def _minor(version: str) -> tuple[int, int] | None:
    m = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def pair_problem(torchao: str, torch: str) -> str | None:
    """None when torchao ``torchao`` with torch ``torch`` is a supported pair, else why not, in words."""
    ao, pt = _minor(torchao), _minor(torch)
    if ao is None:
        return f"cannot read torchao's version {torchao!r}"
    if ao not in MIN_TORCH:
        return (f"torchao {torchao} is outside the releases tebench supports ({SUPPORTED_RANGE}; "
                f"pip install 'tebench[ao]')")
    need = MIN_TORCH[ao]
    if pt is None or pt < need:
        return (f"torchao {torchao} needs torch >= {need[0]}.{need[1]}, and torch {torch} is installed "
                "(a mismatched pair skips torchao's extensions or aborts)")
    return None


def describe(torchao: str | None, error: str | None, torch: str) -> str:
    """One line for ``tebench env``: the installed pair and whether tebench runs it."""
    if torchao is None:
        return f"not importable ({error or 'not installed'}); AO-FP8 is skipped"
    problem = pair_problem(torchao, torch)
    return f"{torchao} with torch {torch}: " + (f"not supported ({problem})" if problem else
                                                  f"supported ({SUPPORTED_RANGE})")
