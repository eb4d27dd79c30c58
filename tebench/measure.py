"""Run one case: warm-up, timed steps, memory, GPU-busy fraction, validation.

This runs inside the case's own process (see :mod:`tebench.worker`). It
returns raw measurements only; statistics, throughput, MFU and parity are
derived in one place, :mod:`tebench.stats` and :mod:`tebench.parity`.
"""

from __future__ import annotations

import inspect
import math
import os
import resource
import statistics
import sys
import time
import warnings
from typing import Any, Callable

import torch

from tebench.fp8state import ScalingRecorder
from tebench.matrix import Case
from tebench.train import Trainer, build_trainer

Progress = Callable[..., None]
"""``progress(phase, step, total)``; the announcement of the timed steps adds the last warm-up
step's milliseconds (or None), by which the runner tells a launch-bound case."""

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


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _sample_points(total: int, count: int) -> set[int]:
    if count <= 0 or total <= 0:
        return set()
    if count == 1 or total == 1:
        return {total - 1}
    return {round(k * (total - 1) / (count - 1)) for k in range(count)}


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
    _sync(device)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for batch in batches:
                trainer.step(batch)
            _sync(device)
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


def _fingerprint(model: torch.nn.Module) -> tuple[list[str], torch.Tensor]:
    """A cheap per-parameter checksum (sum and sum of squares), read back in one copy."""
    names, sums = [], []
    with torch.no_grad():
        for name, p in model.named_parameters():
            v = p.detach().float()
            names.append(name)
            sums.append(torch.stack([v.sum(), v.square().sum()]))
    return names, torch.stack(sums).cpu() if sums else torch.zeros(0, 2)


def frozen_parameters(before: tuple[list[str], torch.Tensor], model: torch.nn.Module) -> dict[str, Any]:
    """Which parameter tensors training left exactly unchanged.

    A frozen layer (a ``requires_grad`` slip, an optimizer that never saw it, a
    stale FP8 copy) can leave the loss looking fine when the rest of the model
    has capacity to spare; the verdict compares this count with the reference's.
    """
    names, start = before
    _, end = _fingerprint(model)
    same = [n for n, a, b in zip(names, start, end) if torch.equal(a, b)]
    return {"tensors": len(names), "unchanged": len(same), "unchanged_names": same[:20]}


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
            _sync(device)
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
            _sync(device)  # each warm-up step's own time; the timed steps never sync
            step_ms.append((time.perf_counter() - t) * 1000.0)
        after_step(i)
        if rule == "settled" and settled(step_ms, floor, st.warmup_rtol):
            out.update(steps=i + 1, settled=True, step_ms=step_ms)
            return out
    _sync(device)
    out.update(steps=st.warmup, settled=None if rule == "fixed" or not st.warmup else False, step_ms=step_ms)
    return out


def _memory(device: torch.device) -> dict[str, Any]:
    if device.type == "cuda":
        return {
            "kind": "cuda",
            "peak_allocated_bytes": torch.cuda.max_memory_allocated(device),
            "peak_reserved_bytes": torch.cuda.max_memory_reserved(device),
        }
    # ru_maxrss is in kilobytes on Linux and bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return {"kind": "cpu", "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale}


def draw_batches(wl: Any, case: Case, count: int, device: torch.device, data_seed: int | None = None) -> list:
    """The case's batches; with ``data_seed`` (a data-parallel rank's), other tokens of the same task.

    A workload whose task itself is seeded (distillation: the teacher) takes the
    rank's seed as ``data_seed`` only, so every rank learns the same teacher.
    """
    seed = case.settings.seed
    if data_seed is None:
        return wl.batches(case.size_spec, count, seed, device)
    if "data_seed" in inspect.signature(wl.batches).parameters:
        return wl.batches(case.size_spec, count, seed, device, data_seed=data_seed)
    return wl.batches(case.size_spec, count, data_seed, device)


def run_case(case: Case, device: torch.device, progress: Progress,
             wrap: Callable | None = None, amax_group: Any = None, data_seed: int | None = None) -> dict[str, Any]:
    """Build, warm up, time and validate ``case``; return raw measurements.

    ``data_seed`` lets each rank of a data-parallel run draw its own batches
    (rank 0 keeps the case's seed, so its losses stay comparable with one GPU).
    """
    st = case.settings
    phases: dict[str, float] = {}
    t = time.perf_counter()
    total = st.warmup + st.steps
    torch.manual_seed(st.seed)
    progress("build", 0, total)
    from tebench.workloads import WORKLOADS

    wl = WORKLOADS[case.workload]
    batches = draw_batches(wl, case, total, device, data_seed)
    trainer = build_trainer(case, device, batches, wrap=wrap, amax_group=amax_group)
    slowdown = injected_slowdown()
    if slowdown is not None:
        trainer.setup["test_slowdown"] = slowdown
    params = sum(p.numel() for p in trainer.eager.parameters())
    _sync(device)
    phases["build_s"] = time.perf_counter() - t
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    initial = _fingerprint(trainer.eager)
    recorder = ScalingRecorder(trainer.eager) if (case.fp8 and case.fp8.spec.stateful) else None
    sample_at = _sample_points(total, st.scaling_samples) if recorder else set()
    losses: list[torch.Tensor] = []

    t = time.perf_counter()
    def after_warmup_step(i: int) -> None:
        if i in sample_at:
            recorder.sample(i)
        progress("warmup", i + 1, total)

    warm = warm_up(trainer, batches, st, device, losses, after_warmup_step)
    phases["warmup_s"] = time.perf_counter() - t

    def after_step(i: int) -> None:
        if i in sample_at:
            recorder.sample(i)
        progress("measure", i + 1, total)

    # Announced before the first timed step, with the step time so far: for a launch-bound case the
    # runner stops pre-started workers until the timed steps end.
    progress("measure", warm["steps"], total, warm["step_ms"][-1] if warm["step_ms"] else None)
    t = time.perf_counter()
    samples = timed_steps(trainer, batches, warm["steps"], total, losses, after_step)
    wall = time.perf_counter() - t
    phases["measure_s"] = wall
    memory = _memory(device)
    memory["param_count"] = params
    updates = frozen_parameters(initial, trainer.eager)
    loss_values = torch.stack(losses).float().cpu().tolist()

    busy = None
    if device.type == "cuda" and st.profile_steps > 0:
        progress("profile", total, total)
        t = time.perf_counter()
        busy = gpu_busy(trainer, batches[: min(st.profile_steps, len(batches))], statistics.median(samples))
        phases["profile_s"] = time.perf_counter() - t

    validation: dict[str, Any] = {}
    if st.validate and all(math.isfinite(v) for v in loss_values):
        progress("validate", total, total)
        t = time.perf_counter()
        validation = wl.validate(trainer.eager, case.size_spec, st.seed, device, trainer.precision.forward_ctx)
        phases["validate_s"] = time.perf_counter() - t

    return {
        "timing": {
            "samples_ms": samples,
            "timer": "cuda_events" if device.type == "cuda" else "perf_counter",
            "wall_ms_per_step": wall * 1000.0 / max(1, len(samples)),
        },
        "warmup": warm,
        "memory": memory,
        "loss": {"per_step": loss_values, "warmup_steps": warm["steps"]},
        "validation": validation,
        "gpu_busy": busy,
        "fp8_state": recorder.summary() if recorder else None,
        "setup": trainer.setup,
        "updates": updates,
        "phases": phases,
    }
