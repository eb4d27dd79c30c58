"""A reference mode's extra training runs: other seeds (the seed spread) and twins (the paired noise floor).

One run of the reference says where its loss curve went, not how far a
correct run could land from it. Two kinds of extra run answer that, untimed
and after everything the case measures:

* **replicas** (``reference_seeds``): other initial weights and other batches
  of the same task (the ``replica`` seed purpose), as MLPerf's reference
  convergence points. Their spread is *unpaired*: it mixes in how much the
  seed itself moves the loss, which no case of the same seed shows.
* **twins** (``reference_twins``): the case's own seed, weights and batches,
  with every weight moved by ``1 ± twin_scale`` (random signs from the
  ``twin`` seed purpose; by default 2**-23, fp32's last bit). Every mode shares the
  reference's weights and batches, so a correct mode's gap from the reference
  is *paired*; how far a twin lands from the reference is that pair's noise
  floor: rounding amplified by the training's own chaos. On a GPU, the
  nondeterministic kernels' rounding adds to it, as it does to every case.

Validation uses the case's own held-out data, so the extra runs' held-out
values are comparable with every mode's.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from typing import Any, Callable

import torch

from tebench.schema.records import Case
from tebench.plan.modes import MODES
from tebench.plan.faults import mutation_for
from tebench.worker.seeds import derive_seed
from tebench.worker.train import build_trainer
from tebench.workloads import size_of

def wanted(case: Case) -> bool:
    """Whether ``case`` trains extra runs: a plain single-process run of a mode that may be parity's reference."""
    mode = MODES[case.mode]
    st = case.settings
    return ((st.reference_seeds > 0 or st.reference_twins > 0) and mode.reference_rank is not None
            and not mode.compile and not case.graphs and case.fp8 is None and case.parallel == "single"
            and mutation_for(case.id) is None)


_GOLDEN = -7046029254386353131
"""splitmix64's constants as signed int64: 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB."""
_MIX1 = -4658895280553007687
_MIX2 = -7723592293110705685


def _signs(n: int, salt: int, device: torch.device) -> torch.Tensor:
    """``n`` signs (+1/-1) from a hash (splitmix64's) of each element's index and ``salt``, on ``device``.

    Plain integer arithmetic (int64 products wrap the same way on every device): the same signs on the CPU
    and a GPU, and no host-side random draw per element, which took 40 s of a Llama twin on the H200.
    """
    x = (torch.arange(n, dtype=torch.int64, device=device) + salt) * _GOLDEN
    # splitmix64's finalizer (its shifts sign-extend here, which mixes as well).
    x = (x ^ (x >> 30)) * _MIX1
    x = (x ^ (x >> 27)) * _MIX2
    x = x ^ (x >> 31)
    return (((x >> 40) & 1) * 2 - 1).to(torch.int8)


def perturb(model: torch.nn.Module, seed: int, scale: float) -> None:
    """Move every floating-point weight of ``model`` by ``1 ± scale``, the signs a hash of ``seed``, the
    parameter's name and the element's index.

    At fp32's 2**-23 every element moves by its last bit (one or two units in the last place).
    """
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if not p.is_floating_point():
                continue
            salt = derive_seed(seed, "param", zlib.crc32(name.encode())) % (2**40)  # the param rule, on the twin's seed
            signs = _signs(p.numel(), salt, p.device).view(p.shape).to(p.dtype)
            p.mul_(1 + scale * signs)


def _train(case: Case, device: torch.device, wl: Any, seed: int, twin_seed: int | None, forward_validate: bool,
           progress: Callable[..., None], phase: str) -> tuple[list[float], float | None]:
    st = case.settings
    total = st.warmup + st.steps
    run = case.replace(settings=dataclasses.replace(st, seed=seed))
    torch.manual_seed(seed)
    batches = wl.batches(size_of(case), total, seed, device)
    trainer = build_trainer(run, device, batches)
    if twin_seed is not None:
        perturb(trainer.eager, twin_seed, st.twin_scale)
    losses = []
    for i in range(total):
        losses.append(trainer.step(batches[i]))
        progress(phase, i + 1, total)
    curve = torch.stack(losses).float().cpu().tolist()
    value = None
    if forward_validate and all(math.isfinite(v) for v in curve):
        # Validation uses the case's seed for its held-out data, whatever the run's own seed.
        result = wl.validate(trainer.eager, size_of(case), st.seed, device, trainer.precision.forward_ctx)
        metric = result.get("metric")
        if metric and isinstance(result.get(metric), (int, float)):
            value = float(result[metric])
    del trainer, batches, losses
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return curve, value


def train_replicas(case: Case, device: torch.device, wl: Any, forward_validate: bool,
                   progress: Callable[..., None]) -> dict[str, Any]:
    """Train ``case`` again at each replica seed; their loss curves, seeds and validation values.

    Each run is built, trained ``warmup + steps`` steps and dropped before
    the next, so the peak memory is one model's (the case's own peak was read
    before this runs).
    """
    out: dict[str, Any] = {"curves": [], "seeds": [], "values": []}
    for k in range(1, case.settings.reference_seeds + 1):
        seed = derive_seed(case.settings.seed, "replica", k)
        curve, value = _train(case, device, wl, seed, None, forward_validate, progress, "replicas")
        out["curves"].append(curve)
        out["seeds"].append(seed)
        if value is not None:
            out["values"].append(value)
    return out


def train_twins(case: Case, device: torch.device, wl: Any, forward_validate: bool,
                progress: Callable[..., None]) -> dict[str, Any]:
    """Train ``case`` again at its own seed from each twin's perturbed weights; their curves and validation values."""
    out: dict[str, Any] = {"curves": [], "values": []}
    for k in range(1, case.settings.reference_twins + 1):
        curve, value = _train(case, device, wl, case.settings.seed, derive_seed(case.settings.seed, "twin", k),
                              forward_validate, progress, "twins")
        out["curves"].append(curve)
        if value is not None:
            out["values"].append(value)
    return out
