"""The untimed warm-up and the timed steps: CUDA events or the monotonic clock, one sync at the end."""

from __future__ import annotations

import time
from typing import Any, Callable
import torch
from tebench.worker.train import Trainer
from tebench.worker.hooks.slowdown import injected_slowdown


class _CudaTimer:
    """Per-step CUDA events. No host sync inside the loop: the events record the
    GPU timeline, which includes any idle gap while the GPU waits for the CPU,
    so a CPU-bound step is measured as such."""

    def __init__(self, steps: int):
        self.events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                       for _ in range(steps)]
        self.i = 0

    def start(self) -> None:
        self.events[self.i][0].record()

    def stop(self) -> None:
        self.events[self.i][1].record()
        self.i += 1

    def elapsed_ms(self) -> list[float]:
        torch.cuda.synchronize()
        return [a.elapsed_time(b) for a, b in self.events[: self.i]]


class _CpuTimer:
    """Monotonic clock around each step; CPU compute is synchronous."""

    def __init__(self, steps: int):
        self.samples: list[float] = []
        self.t0 = 0.0

    def start(self) -> None:
        self.t0 = time.perf_counter()

    def stop(self) -> None:
        self.samples.append((time.perf_counter() - self.t0) * 1000.0)

    def elapsed_ms(self) -> list[float]:
        return self.samples


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_steps(trainer: Trainer, batches: list, start: int, stop: int, losses: list[torch.Tensor],
                after_step: Callable[[int], Any] | None = None) -> list[float]:
    """Run and time steps ``start..stop-1``; returns per-step milliseconds (synchronizes once, at the end)."""
    device = batches[0].inputs.device
    timer = _CudaTimer(stop - start) if device.type == "cuda" else _CpuTimer(stop - start)
    slowdown = injected_slowdown()
    for i in range(start, stop):
        timer.start()
        t0 = time.perf_counter()
        losses.append(trainer.step(batches[i]))
        if slowdown is not None:
            # Test hook: wait for the step to finish (the sync happens for a factor of 1.0 too, so
            # A/A trials are treated alike), then spin, not sleep, for the extra fraction: a sleep
            # overshoots by tens of microseconds, several percent of a millisecond step.
            sync(device)
            end = t0 + (time.perf_counter() - t0) * slowdown
            while time.perf_counter() < end:
                pass
        timer.stop()
        if after_step is not None:
            after_step(i)
    return timer.elapsed_ms()


def settled(step_ms: list[float], floor: int, rtol: float) -> bool:
    """Whether timing may start after these warm-up step times.

    At least ``floor`` steps ran, and the last two are within ``rtol`` of each
    other. On the H200 the first step of a nightly case took 0.03-30 s (compilation,
    kernel loading, autotuning); of seven cases timed from step 0, the second step was
    within a few percent of the steady state in three and 8-32% off in the others. So
    no fixed count fits: two steps in agreement mark the end of the transient, and one
    slow outlier later on is what the median is for.
    """
    if len(step_ms) < max(floor, 2):
        return False
    a, b = step_ms[-2], step_ms[-1]
    return max(a, b) <= (1.0 + rtol) * min(a, b)


def warm_up(trainer: Trainer, batches: list, st: Any, device: torch.device, losses: list[torch.Tensor],
            after_step: Callable[[int], Any]) -> dict[str, Any]:
    """Run the untimed warm-up steps; returns the rule, and how many steps it took.

    The case trains ``warmup + steps`` steps whatever the rule (the loss curve
    is judged step by step against the reference), so stopping the warm-up early
    times more steps rather than training fewer.
    """
    rule = st.warmup_rule
    floor = min(st.warmup_floor, st.warmup)
    out: dict[str, Any] = {"rule": rule, "floor": floor, "ceiling": st.warmup, "rtol": st.warmup_rtol}
    step_ms: list[float] = []
    for i in range(st.warmup):
        t = time.perf_counter()
        losses.append(trainer.step(batches[i]))
        if rule == "settled":
            sync(device)  # each warm-up step's own time; the timed steps never sync
            step_ms.append((time.perf_counter() - t) * 1000.0)
        after_step(i)
        if rule == "settled" and settled(step_ms, floor, st.warmup_rtol):
            out.update(steps=i + 1, settled=True, step_ms=step_ms)
            return out
    sync(device)
    out.update(steps=st.warmup, settled=None if rule == "fixed" or not st.warmup else False, step_ms=step_ms)
    return out
