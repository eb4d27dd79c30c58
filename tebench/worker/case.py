"""Run one case: build, warm up, time, then memory, GPU-busy fraction and validation.

This runs inside the case's own process (see :mod:`tebench.worker.main`). It
returns raw measurements only; statistics, throughput, MFU and parity are
derived in the parent, :mod:`tebench.analysis.stats` and :mod:`tebench.analysis.parity`.
"""

from __future__ import annotations

import inspect
import math
import resource
import statistics
import sys
import time
from typing import Any, Callable
import torch
from tebench.worker.fp8state import ScalingRecorder
from tebench.plan.matrix import Case
from tebench.schema.records import (FP8State, GpuBusy, Loss, Measurements, Memory, Phases, Setup, Timing, Updates,
                                    Validation, Warmup)
from tebench.worker.train import build_trainer
from tebench.worker.hooks.slowdown import injected_slowdown
from tebench.worker.profile import gpu_busy
from tebench.worker.timing import sync, timed_steps, warm_up


Progress = Callable[..., None]
"""``progress(phase, step, total)``; the announcement of the timed steps adds the last warm-up
step's milliseconds (or None), by which the runner tells a launch-bound case."""


def _sample_points(total: int, count: int) -> set[int]:
    if count <= 0 or total <= 0:
        return set()
    if count == 1 or total == 1:
        return {total - 1}
    return {round(k * (total - 1) / (count - 1)) for k in range(count)}


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
             wrap: Callable | None = None, amax_group: Any = None, data_seed: int | None = None) -> Measurements:
    """Build, warm up, time and validate ``case``; return its measurements (the declared parts of a record).

    ``data_seed`` lets each rank of a data-parallel run draw its own batches
    (rank 0 keeps the case's seed, so its losses stay comparable with one GPU).
    """
    st = case.settings
    phases: dict[str, float] = {}
    t = time.perf_counter()
    total = st.warmup + st.steps
    torch.manual_seed(st.seed)
    progress("build", 0, total)
    from tebench.worker.models import WORKLOADS

    wl = WORKLOADS[case.workload]
    batches = draw_batches(wl, case, total, device, data_seed)
    trainer = build_trainer(case, device, batches, wrap=wrap, amax_group=amax_group)
    slowdown = injected_slowdown()
    if slowdown is not None:
        trainer.setup["test_slowdown"] = slowdown
    params = sum(p.numel() for p in trainer.eager.parameters())
    sync(device)
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

    return Measurements(
        status="ok",
        timing=Timing(samples_ms=samples, timer="cuda_events" if device.type == "cuda" else "perf_counter",
                      wall_ms_per_step=wall * 1000.0 / max(1, len(samples))),
        warmup=Warmup.from_dict(warm),
        memory=Memory.from_dict(memory),
        loss=Loss(per_step=loss_values, warmup_steps=warm["steps"]),
        validation=Validation.from_dict(validation),  # a workload's own keys ride along
        gpu_busy=GpuBusy.from_dict(busy) if busy else None,
        # A case with no FP8 layer to record (a module without a GEMM) has no state.
        fp8_state=FP8State.from_dict(state) if recorder and (state := recorder.summary()) else None,
        setup=Setup.from_dict(trainer.setup),
        updates=Updates.from_dict(updates),
        phases=Phases(**phases),
    )
