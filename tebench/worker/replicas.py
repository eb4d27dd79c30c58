"""A reference mode's extra training runs at other seeds: the seed spread that parity's equivalence needs.

One run of the reference says where its loss curve went, not how far a
correct run could land from it. MLPerf's reference convergence points answer
that with many reference seeds; tebench trains the reference mode
``reference_seeds`` more times, untimed and after everything the case measures,
each with other initial weights and other batches of the same task (the
``replica`` seed purpose). Validation uses the case's own held-out data, so the
replicas' held-out values are comparable with every mode's.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import torch

from tebench.plan.matrix import Case
from tebench.plan.modes import MODES
from tebench.worker.hooks.faults import mutation_for
from tebench.worker.seeds import derive_seed
from tebench.worker.train import build_trainer


def wanted(case: Case) -> bool:
    """Whether ``case`` trains replicas: a plain single-process run of a mode that may be parity's reference."""
    mode = MODES[case.mode]
    return (case.settings.reference_seeds > 0 and mode.reference_rank is not None and not mode.compile
            and not case.graphs and case.fp8 is None and case.parallel == "single"
            and mutation_for(case.id) is None)


def train_replicas(case: Case, device: torch.device, wl: Any, forward_validate: bool,
                   progress: Callable[..., None]) -> dict[str, Any]:
    """Train ``case`` again at each replica seed; their loss curves, seeds and validation values.

    Each replica is built, trained ``warmup + steps`` steps and dropped before
    the next, so the peak memory is one model's (the case's own peak was read
    before this runs).
    """
    st = case.settings
    total = st.warmup + st.steps
    curves: list[list[float]] = []
    seeds: list[int] = []
    values: list[float] = []
    for k in range(1, st.reference_seeds + 1):
        seed = derive_seed(st.seed, "replica", k)
        replica = dataclasses.replace(case, settings=dataclasses.replace(st, seed=seed))
        torch.manual_seed(seed)
        batches = wl.batches(case.size_spec, total, seed, device)
        trainer = build_trainer(replica, device, batches)
        losses = []
        for i in range(total):
            losses.append(trainer.step(batches[i]))
            progress("replicas", i + 1, total)
        curve = torch.stack(losses).float().cpu().tolist()
        curves.append(curve)
        seeds.append(seed)
        if forward_validate and all(math.isfinite(v) for v in curve):
            result = wl.validate(trainer.eager, case.size_spec, st.seed, device, trainer.precision.forward_ctx)
            metric = result.get("metric")
            if metric and isinstance(result.get(metric), (int, float)):
                values.append(float(result[metric]))
        del trainer, batches, losses
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return {"curves": curves, "seeds": seeds, "values": values}
