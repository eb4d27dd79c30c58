"""What the profiler sees in a few extra (never the timed) steps: how busy the GPU was, and which kernels ran.

The kernels are kept by name with their time and launch count per step; the
parent classifies them (:mod:`tebench.schema.kernel_rules`), so a better rule
table re-reads stored records without re-running anything.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from typing import Any, Callable
from tebench.schema import kernel_rules
from tebench.worker.train import Trainer
from tebench.worker.timing import sync

KERNELS_KEPT = 200
"""Kernel names kept per record, longest total time first; the rest is summed (rest_ms)."""
NAME_MAX = 1000
"""A kernel name past this many characters is cut (C++ template names can run to thousands)."""


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


def kernel_table(events: list[tuple[str, float, float]], steps: int, why: str) -> dict[str, Any]:
    """The ``kernels`` part from ``(name, start_us, end_us)`` device events of ``steps`` profiled steps."""
    time_us: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for name, start, end in events:
        name = name if len(name) <= NAME_MAX else name[: NAME_MAX - 1] + "…"
        time_us[name] += max(0.0, end - start)
        calls[name] += 1
    ranked = sorted(time_us, key=lambda n: (-time_us[n], n))
    kept, rest = ranked[:KERNELS_KEPT], ranked[KERNELS_KEPT:]
    return {
        **communication(events, steps),
        "profiled_steps": steps,
        "union_ms": union_length([(s, e) for _, s, e in events]) / 1000.0 / steps,
        "kernels": [{"name": n, "ms": time_us[n] / 1000.0 / steps, "calls": calls[n] / steps} for n in kept],
        "rest_ms": sum(time_us[n] for n in rest) / 1000.0 / steps if rest else None,
        "rest_calls": sum(calls[n] for n in rest) / steps if rest else None,
        "why": why,
    }


def communication(events: list[tuple[str, float, float]], steps: int) -> dict[str, float]:
    """Per step, the communication kernels' time and the part of it no other kernel overlapped.

    Overlap needs the intervals, which records do not keep, so it is measured here; which
    kernels communicate is the parent's rule table's answer (one table for both sides).
    Empty where no communication kernel ran (every single-GPU case).
    """
    comm: list[tuple[float, float]] = []
    other: list[tuple[float, float]] = []
    for name, s, e in events:
        kind = kernel_rules.classify(name)
        if kind != kernel_rules.ANNOTATION:
            (comm if kind == "communication" else other).append((s, e))
    if not comm:
        return {}
    comm_us, other_us = union_length(comm), union_length(other)
    hidden_us = comm_us + other_us - union_length(comm + other)
    return {"communication_ms": comm_us / 1000.0 / steps,
            "communication_exposed_ms": max(0.0, comm_us - hidden_us) / 1000.0 / steps}


def device_events(trainer: Trainer, batches: list, around: Callable[[], Any] | None = None
                  ) -> list[tuple[str, float, float]]:
    """``(name, start_us, end_us)`` of every CUDA kernel, copy and memset in ``len(batches)`` extra steps.

    ``around``: a context manager factory entered around the profiled steps
    (the module census rides on the same steps).
    """
    import contextlib

    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    device = batches[0].inputs.device
    sync(device)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with (around() if around else contextlib.nullcontext()):
                for batch in batches:
                    trainer.step(batch)
                sync(device)
    # A record_function region (Optimizer.step#AdamW.step) has a span on the GPU timeline too:
    # it is no kernel, and counting it would fill the gaps between the optimizer's kernels.
    return [(e.name, e.time_range.start, e.time_range.end) for e in prof.events()
            if e.device_type == DeviceType.CUDA and not getattr(e, "is_user_annotation", False)]


def gpu_busy(events: list[tuple[str, float, float]], steps: int, step_ms: float) -> dict[str, Any]:
    """Fraction of the step the GPU spends in kernels (and copies).

    The kernels of a few extra steps are collected with the profiler, their
    time intervals merged (so overlapping streams count once), and divided by
    the median step time of the *unprofiled* timed steps: the profiler's own
    CPU overhead would otherwise make every case look more CPU-bound than it is.
    """
    kernel_ms = union_length([(s, e) for _, s, e in events]) / 1000.0 / steps
    return {
        "kernel_ms_per_step": kernel_ms,
        "busy_fraction": min(1.0, kernel_ms / step_ms) if step_ms > 0 else None,
        "profiled_steps": steps,
        "kernels_seen": len(events),
        "method": "union of CUDA kernel/memcpy intervals from torch.profiler over extra steps, "
                  "divided by the median unprofiled step time",
    }
