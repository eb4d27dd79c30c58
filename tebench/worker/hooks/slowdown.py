"""``TEBENCH_TEST_SLOWDOWN``: a known, proportional slowdown of every timed step, to measure a gate's power."""

from __future__ import annotations

import math
import os


# Test hook (documented): TEBENCH_TEST_SLOWDOWN=1.05 stretches every timed step to 1.05x its
# own duration, so a gate's power can be measured against a known, proportional slowdown.
SLOWDOWN_ENV = "TEBENCH_TEST_SLOWDOWN"


def injected_slowdown() -> float | None:
    """The factor of TEBENCH_TEST_SLOWDOWN (None when unset); a bad value is an error, not ignored."""
    raw = os.environ.get(SLOWDOWN_ENV, "").strip()
    if not raw:
        return None
    factor = float(raw)
    if not (math.isfinite(factor) and factor >= 1.0):
        raise ValueError(f"{SLOWDOWN_ENV}={raw!r}: expected a factor >= 1, e.g. 1.05")
    return factor
