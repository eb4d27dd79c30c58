"""``TEBENCH_TEST_SLOWDOWN``: a known, proportional slowdown of every timed step, to measure a gate's power."""

from __future__ import annotations

from tebench import envvars


# Test hook (documented): TEBENCH_TEST_SLOWDOWN=1.05 stretches every timed step to 1.05x its
# own duration, so a gate's power can be measured against a known, proportional slowdown.
SLOWDOWN_ENV = envvars.TEST_SLOWDOWN


def injected_slowdown() -> float | None:
    """The factor of TEBENCH_TEST_SLOWDOWN (None when unset); a bad value is an error naming the variable
    (:class:`tebench.envvars.EnvError`), not ignored."""
    return envvars.slowdown_factor()
