"""Run one case: build, warm up, time, then memory, the profiled extra steps and validation.

This runs inside the case's own process (see :mod:`tebench.worker.main`). It
returns raw measurements only; statistics, throughput, MFU and parity are
derived in the parent, :mod:`tebench.analysis.stats` and :mod:`tebench.analysis.parity`.
"""

from __future__ import annotations

import inspect
import math
import time
from typing import Any, Callable
import torch
from tebench.worker.fp8state import ScalingRecorder
from tebench.schema.records import Case
from tebench.plan.modes import MODES
from tebench.plan.recipes import RECIPES
from tebench.schema.records import (median, Energy, FP8State, GpuBusy, Kernels, Loss, Measurements, Memory, ModuleCensus, Phases,
                                    Setup, Timing, Updates, Validation, Warmup)
from tebench.worker import memory as worker_memory
from tebench.worker import energy, replicas
from tebench.worker.census import Census
from tebench.worker.train import Trainer, build_trainer
from tebench.worker.hooks.slowdown import injected_slowdown
from tebench.worker.profile import device_events, gpu_busy, kernel_table
from tebench.worker.timing import sync, timed_steps, warm_up
from tebench.workloads import size_of


Progress = Callable[..., None]
"""``progress(phase, step, total)``; the announcement of the timed steps adds the last warm-up
step's milliseconds (or None), by which the runner tells a launch-bound case."""


def _sample_points(total: int, count: int) -> set[int]:
    if count <= 0 or total <= 0:
        return set()
    if count == 1 or total == 1:
        return {total - 1}
    return {round(k * (total - 1) / (count - 1)) for k in range(count)}


_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
# Odd multipliers of the two position-weighted sums (any odd 63-bit constants would do).
_HASH_MULTIPLIERS = ((0x9E3779B97F4A7C15 & (2**63 - 1)) | 1, (0xC2B2AE3D27D4EB4F & (2**63 - 1)) | 1)


def _bits(p: torch.Tensor) -> torch.Tensor:
    """A parameter's bit patterns as int64, one per element (an FP8 tensor subclass: its dequantized value's)."""
    v = p.detach()
    if hasattr(v, "to_local"):  # an FSDP2 shard (DTensor): this rank's own elements
        v = v.to_local()
    if type(v) is not torch.Tensor and callable(getattr(v, "dequantize", None)):
        # A quantized parameter (TE's Float8Tensor under fp8_weights) takes view(dtype) for a shape
        # and casts .to(int64) by value: its weights (|w| < 1) all hashed as zeros, and every one
        # read as "never changed" (the H200's gpu-smoke fp8-weights cases, 2026-12-03 and -04).
        v = v.dequantize()
    try:
        return v.contiguous().view(_INT_OF_SIZE[v.element_size()]).reshape(-1).to(torch.int64)
    except (KeyError, RuntimeError, TypeError):
        return v.float().contiguous().view(torch.int32).reshape(-1).to(torch.int64)


def _fingerprint(model: torch.nn.Module) -> tuple[list[str], torch.Tensor]:
    """An exact per-parameter hash of bit patterns, read back in one copy.

    It used to be an fp32 (sum, sum of squares) checksum, and that could not
    see the update of a LayerNorm weight of 4096 ones: one ulp of the sum is
    4.9e-4, a few steps' update at lr 1e-4 (on the CPU, 5 of 2,000 random
    ±6e-4 updates left both sums bit-identical; on the H200 it failed a
    correctly training GPT d4096 every night). Two sums of the integer bit
    patterns weighted by position (wrapping int64 arithmetic) change whenever
    any element's bits change, except by a 2**-64 coincidence.
    """
    names, sums = [], []
    with torch.no_grad():
        for name, p in model.named_parameters():
            bits = _bits(p)
            position = torch.arange(1, bits.numel() + 1, device=bits.device, dtype=torch.int64)
            names.append(name)
            sums.append(torch.stack([(bits * (position * m + 1)).sum() for m in _HASH_MULTIPLIERS]))
    return names, torch.stack(sums).cpu() if sums else torch.zeros(0, 2, dtype=torch.int64)


def frozen_parameters(before: tuple[list[str], torch.Tensor], model: torch.nn.Module) -> dict[str, Any]:
    """Which parameter tensors training left exactly unchanged (bit for bit).

    A frozen layer (a ``requires_grad`` slip, an optimizer that never saw it, a
    stale FP8 copy) can leave the loss looking fine when the rest of the model
    has capacity to spare; the verdict compares this count with the reference's.
    """
    names, start = before
    _, end = _fingerprint(model)
    same = [n for n, a, b in zip(names, start, end) if torch.equal(a, b)]
    return {"tensors": len(names), "unchanged": len(same), "unchanged_names": same[:20], "method": "bits"}


def profiled_steps(trainer: Trainer, batches: list, step_ms: float, profile_steps: int) -> dict[str, Any]:
    """GPU busy, kernels and module census from extra steps after the timed ones (CUDA only).

    Every CUDA case profiles at least one extra step: the time breakdown and the
    proof that an FP8 case ran FP8 GEMMs come from it. ``profile_steps`` > 0
    asks for that many, and for the GPU-busy fraction.
    """
    steps = max(1, profile_steps)
    window = batches[: min(steps, len(batches))]
    case = trainer.case
    hooks_blind = ("CUDA graphs replay without Python forwards" if case.graphs else
                   "torch.compile: hooks would recompile the model" if MODES[case.mode].compile else None)
    census = Census(trainer.eager, len(window))
    events = device_events(trainer, window, around=None if hooks_blind else census.watching)
    why = "profile_steps" if profile_steps > 0 else "one extra step for the time breakdown and the FP8 proof"
    return {
        "gpu_busy": GpuBusy.from_dict(gpu_busy(events, len(window), step_ms)) if profile_steps > 0 else None,
        "kernels": Kernels.from_dict(kernel_table(events, len(window), why)),
        "modules": ModuleCensus.from_dict(census.summary(observed=hooks_blind is None, note=hooks_blind)),
    }


def draw_batches(wl: Any, case: Case, count: int, device: torch.device, data_seed: int | None = None) -> list:
    """The case's batches; with ``data_seed`` (a data-parallel rank's), other tokens of the same task.

    A workload whose task itself is seeded (distillation: the teacher) takes the
    rank's seed as ``data_seed`` only, so every rank learns the same teacher.
    """
    seed = case.settings.seed
    if data_seed is None:
        return wl.batches(size_of(case), count, seed, device)
    if "data_seed" in inspect.signature(wl.batches).parameters:
        return wl.batches(size_of(case), count, seed, device, data_seed=data_seed)
    return wl.batches(size_of(case), count, data_seed, device)


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
    # Before the peak-memory reset: the hash's temporaries (two int64 copies of the largest tensor) are
    # not the training's memory.
    initial = _fingerprint(trainer.eager)
    sync(device)
    phases["build_s"] = time.perf_counter() - t
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    recorder = ScalingRecorder(trainer.eager) if (case.fp8 and RECIPES[case.fp8.recipe].stateful) else None
    sample_at = _sample_points(total, st.scaling_samples) if recorder else set()
    losses: list[torch.Tensor] = []

    t = time.perf_counter()
    def after_warmup_step(i: int) -> None:
        if recorder is not None and i in sample_at:
            recorder.sample(i)
        progress("warmup", i + 1, total)

    warm = warm_up(trainer, batches, st, device, losses, after_warmup_step)
    phases["warmup_s"] = time.perf_counter() - t

    def after_step(i: int) -> None:
        if recorder is not None and i in sample_at:
            recorder.sample(i)
        progress("measure", i + 1, total)

    # Announced before the first timed step, with the step time so far: for a launch-bound case the
    # runner stops pre-started workers until the timed steps end.
    progress("measure", warm["steps"], total, warm["step_ms"][-1] if warm["step_ms"] else None)
    monitor, no_energy = energy.open_monitor(device, st.energy_sample_ms / 1000.0)
    if monitor is not None:
        monitor.begin()  # warm_up ended with a sync: the window opens on an idle device
    t = time.perf_counter()
    samples = timed_steps(trainer, batches, warm["steps"], total, losses, after_step)
    wall = time.perf_counter() - t
    # timed_steps synchronized at its end (reading the CUDA events): the window closes on an idle device.
    energy_reading = monitor.end(len(samples)) if monitor is not None else {"unavailable": no_energy}
    phases["measure_s"] = wall
    memory = worker_memory.peaks(device, trainer.eager, trainer.optimizer)
    memory["param_count"] = params
    updates = frozen_parameters(initial, trainer.eager)
    loss_values = torch.stack(losses).float().cpu().tolist()

    profiled: dict[str, Any] = {}
    if device.type == "cuda":
        progress("profile", total, total)
        t = time.perf_counter()
        profiled = profiled_steps(trainer, batches, median(samples), st.profile_steps)
        phases["profile_s"] = time.perf_counter() - t

    validation: dict[str, Any] = {}
    if st.validate and all(math.isfinite(v) for v in loss_values):
        progress("validate", total, total)
        t = time.perf_counter()
        validation = wl.validate(trainer.eager, size_of(case), st.seed, device, trainer.precision.forward_ctx)
        phases["validate_s"] = time.perf_counter() - t

    loss = Loss(per_step=loss_values, warmup_steps=warm["steps"])
    setup = Setup.from_dict(trainer.setup)
    if replicas.wanted(case) and all(math.isfinite(v) for v in loss_values):
        del trainer, batches  # the extra runs build their own: one model at a time on the device
        if st.reference_seeds:
            progress("replicas", 0, total)
            t = time.perf_counter()
            extra = replicas.train_replicas(case, device, wl, bool(validation), progress)
            loss.replicas, loss.replica_seeds = extra["curves"], extra["seeds"]
            if validation and len(extra["values"]) == len(extra["curves"]):
                validation["replicas"] = extra["values"]
            phases["replicas_s"] = time.perf_counter() - t
        if st.reference_twins:
            progress("twins", 0, total)
            t = time.perf_counter()
            twins = replicas.train_twins(case, device, wl, bool(validation), progress)
            loss.twins = twins["curves"]
            if validation and len(twins["values"]) == len(twins["curves"]):
                validation["twins"] = twins["values"]
            phases["twins_s"] = time.perf_counter() - t
    return Measurements(
        status="ok",
        timing=Timing(samples_ms=samples, timer="cuda_events" if device.type == "cuda" else "perf_counter",
                      wall_ms_per_step=wall * 1000.0 / max(1, len(samples))),
        warmup=Warmup.from_dict(warm),
        memory=Memory.from_dict(memory),
        loss=loss,
        validation=Validation.from_dict(validation),  # a workload's own keys ride along
        **profiled,
        # A case with no FP8 layer to record (a module without a GEMM) has no state.
        fp8_state=FP8State.from_dict(state) if recorder and (state := recorder.summary()) else None,
        setup=setup,
        updates=Updates.from_dict(updates),
        energy=Energy.from_dict(energy_reading),
        phases=Phases(**phases),
    )
