"""How many CPUs this process may use: what sizes the parent's pools of workers and pre-started cases."""

from __future__ import annotations

import os
from pathlib import Path


def usable_cpus(cpu_max: Path = Path("/sys/fs/cgroup/cpu.max")) -> int:
    """The CPUs this process may use: its affinity, lowered to its cgroup's CPU quota if it has one.

    A container on a large node sees all the node's CPUs in its affinity while its quota
    (cgroup v2 ``cpu.max``: "QUOTA PERIOD", or "max PERIOD" without one) allows only a few.
    """
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota to read: the affinity is the limit
    return cpus
