"""What the profiler sees in a few extra (never the timed) steps: how busy the GPU was."""

from __future__ import annotations

import math
import warnings
from typing import Any
from tebench.worker.train import Trainer
from tebench.worker.timing import sync


def union_length(spans: list[tuple[float, float]]) -> float:
    """Total length covered by ``(start, end)`` intervals, overlaps counted once.

    Kernels on concurrent streams overlap in time; summing their durations
    would count the same busy microsecond twice and report a GPU busier than
    the wall clock allows.
    """
    total, end = 0.0, -math.inf
    for start, stop in sorted(spans):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def gpu_busy(trainer: Trainer, batches: list, step_ms: float) -> dict[str, Any]:
    """Fraction of the step the GPU spends in kernels (and copies).

    The kernels of a few extra steps are collected with the profiler, their
    time intervals merged (so overlapping streams count once), and divided by
    the median step time of the *unprofiled* timed steps: the profiler's own
    CPU overhead would otherwise make every case look more CPU-bound than it is.
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    device = batches[0].inputs.device
    sync(device)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for batch in batches:
                trainer.step(batch)
            sync(device)
    spans = [(e.time_range.start, e.time_range.end) for e in prof.events() if e.device_type == DeviceType.CUDA]
    kernel_ms = union_length(spans) / 1000.0 / len(batches)
    return {
        "kernel_ms_per_step": kernel_ms,
        "busy_fraction": min(1.0, kernel_ms / step_ms) if step_ms > 0 else None,
        "profiled_steps": len(batches),
        "kernels_seen": len(spans),
        "method": "union of CUDA kernel/memcpy intervals from torch.profiler over extra steps, "
                  "divided by the median unprofiled step time",
    }
