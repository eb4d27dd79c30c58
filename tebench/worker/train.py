"""Turn a case into a ready-to-run train step.

Everything a mode changes is decided here, from the mode's fields: which module
family builds the model, the autocast dtype, TE's FP8 autocast and recipe,
compilation, CUDA graphs and the optimizer. The timing loop in
:mod:`tebench.worker.case` only ever calls :meth:`Trainer.step`.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, cast

import torch

from tebench import envvars
from tebench.worker.hooks import mutations
from tebench.worker import ao_fp8, te_compat
from tebench.worker.te_recipe import build_recipe
from tebench.plan.faults import mutation_for
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.plan.modes import MASTER_WEIGHT_POLICY, MODES
from tebench.worker.models import WORKLOADS
from tebench.worker.models.base import Batch
from tebench.workloads import Workload, size_of

# Test hook (documented in the README): milliseconds of sleep added inside
# every timed step, so a regression can be produced on purpose.
STEP_SLEEP_ENV = envvars.TEST_STEP_SLEEP_MS


@dataclass
class Precision:
    """How the forward pass of one mode runs on one device."""

    device_type: str
    amp_dtype: torch.dtype | None
    fp8_recipe: Any = None
    scaler: Any = None
    cache_enabled: bool = True
    """torch.autocast's weight-cast cache; must be off when CUDA graphs are captured."""
    amax_group: Any = None
    """Process group TE reduces FP8 amaxes over (distributed cases)."""

    def forward_ctx(self) -> contextlib.AbstractContextManager:
        """The context every forward pass of this mode runs in."""
        stack = contextlib.ExitStack()
        if self.amp_dtype is not None:
            stack.enter_context(
                torch.autocast(self.device_type, dtype=self.amp_dtype, cache_enabled=self.cache_enabled)
            )
        if self.fp8_recipe is not None:
            stack.enter_context(te_compat.fp8_autocast(self.fp8_recipe, self.amax_group))
        return stack

    def describe(self) -> dict[str, Any]:
        return {
            "amp_dtype": str(self.amp_dtype).replace("torch.", "") if self.amp_dtype else None,
            "grad_scaler": self.scaler is not None,
            "fp8_recipe": repr(self.fp8_recipe) if self.fp8_recipe is not None else None,
        }


def make_precision(case: Case, device: torch.device, amax_group: Any = None) -> Precision:
    """Precision for the case's mode: bf16 autocast, or fp16 + GradScaler where bf16 is missing."""
    mode = MODES[case.mode]
    amp_dtype, scaler = None, None
    if mode.amp:
        if device.type == "cuda" and not torch.cuda.is_bf16_supported():
            amp_dtype = torch.float16
            scaler = torch.amp.GradScaler("cuda")
        else:
            amp_dtype = torch.bfloat16
    recipe = build_recipe(case.fp8) if (mode.fp8 == "te" and case.fp8) else None
    return Precision(device.type, amp_dtype, recipe, scaler, cache_enabled=not case.graphs,
                     amax_group=amax_group)


def make_optimizer(model: torch.nn.Module, case: Case, device: torch.device,
                   lr_scale: float = 1.0) -> tuple[torch.optim.Optimizer, str]:
    """AdamW with fp32 state for every mode; fused on CUDA (a fair baseline uses a fused optimizer)."""
    params = [p for p in model.parameters() if p.requires_grad]
    lr = case.settings.lr * lr_scale
    beta2 = case.settings.adam_beta2
    betas = (0.9, beta2)
    # Named only where it is not the default (torch's too), so that the setup of every earlier run reads as before.
    named = "" if beta2 == Settings.defaults()["adam_beta2"] else f", betas=(0.9, {beta2:g})"
    if case.fp8_weights:
        # FP8 weights carry no fp32 copy of their own; TE's FusedAdam keeps the
        # fp32 master weights, so the master-weight policy still holds.
        from transformer_engine.pytorch.optimizers import FusedAdam

        optimizer = FusedAdam(params, lr=lr, betas=betas, weight_decay=0.0, master_weights=True)
        seed_fp8_masters(optimizer, params)
        return optimizer, f"te.FusedAdam(master_weights=fp32, seeded from the exact initial values{named})"
    if device.type == "cuda":
        return (torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=0.0, fused=True),
                f"torch.optim.AdamW(fused=True{named})")
    return (torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=0.0, foreach=True),
            f"torch.optim.AdamW(foreach=True{named})")


def _exact_inits(params: Iterable[torch.nn.Parameter]) -> list[tuple[torch.nn.Parameter, torch.Tensor]]:
    """FP8 weights and the exact initial values init_canonical kept for them."""
    return [(p, p.tebench_init_fp32) for p in params if hasattr(p, "tebench_init_fp32")]


def seed_fp8_masters(optimizer: Any, params: list[torch.nn.Parameter]) -> None:
    """Start FusedAdam's fp32 master weights from the exact initial values.

    FusedAdam would otherwise copy them from the FP8 weights, and a delayed-scaling
    weight is quantized at creation with the initial scale of 1: an init of std
    0.02 keeps two or three significant bits, much of it flushed to zero, and the
    run would start from different weights than every other mode.
    """
    for p, exact in _exact_inits(params):
        optimizer.initialize_state(p, False)
        optimizer.set_scaled_state(p, "master_param", exact.to(p.device))


def refresh_fp8_transposes(optimizer: torch.optim.Optimizer, params: list[torch.nn.Parameter],
                           setup: dict[str, Any]) -> None:
    """Keep the transposed copy of delayed-scaling FP8 weights in step with their data.

    TE's FusedAdam updates a delayed-scaling FP8 weight with its fused FP8 kernel,
    which writes the row-wise data only. On GPUs whose FP8 GEMMs need the TN
    layout (Hopper), the backward's dgrad GEMM reads the weight's cached
    transpose, which stays at the values it was created with and is still
    flagged valid: every step after the first would back-propagate through
    stale weights. After the first optimizer step this checks whether any
    transpose is stale; if so it refreshes them (in place, so CUDA graphs see
    it) after every step; either way ``setup`` says which it found.
    """
    from transformer_engine.pytorch.tensor.float8_tensor import Float8Quantizer, Float8Tensor

    fused = [p for p in params if isinstance(p, Float8Tensor) and isinstance(p._quantizer, Float8Quantizer)]
    if not fused:
        return

    def cached(p: torch.nn.Parameter) -> bool:
        return getattr(p, "_transpose", None) is not None and not getattr(p, "_transpose_invalid", True)

    # One hook that keeps its own state: torch iterates the live hook dict, so a
    # hook must not remove or add hooks.
    verdict: dict[str, bool] = {}

    def after_step(*_: Any) -> None:
        with torch.no_grad():
            if "stale" not in verdict:
                stale = [p for p in fused if cached(p) and not torch.equal(p._transpose, p._data.t())]
                verdict["stale"] = bool(stale)
                setup["fp8_weight_transpose"] = (
                    f"refreshed after every optimizer step: TE's FusedAdam left the cached transpose of "
                    f"{len(stale)} of {len(fused)} delayed-scaling FP8 weights stale (the dgrad GEMM reads it)"
                    if stale else "kept in step by TE's FusedAdam; not refreshed")
            if verdict["stale"]:
                for p in fused:
                    if cached(p):
                        p._create_transpose()

    optimizer.register_step_post_hook(after_step)


def calibrate_fp8(trainer: "Trainer", batches: list[Batch], steps: int) -> None:
    """Forward+backward ``steps`` times without an optimizer step, then drop the gradients.

    A delayed-scaling recipe derives each tensor's scale from the amaxes of
    earlier steps; at the first step there are none, TE uses a scale of 1, and
    small tensors (gradients above all) underflow. Calibrating fills the amax
    history first; the weights, the optimizer state and the batches the timed
    run sees are unchanged. FP8 weights, quantized at creation with scale 1, are
    quantized again from their exact values with the calibrated scale.
    """
    wl, model = trainer.workload, trainer.model
    for i in range(steps):
        with trainer.precision.forward_ctx():
            loss = wl.loss(model, batches[i % len(batches)])
        loss.backward()
    trainer.optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():
        for p, exact in _exact_inits(trainer.eager.parameters()):
            # An FP8 weight is TE's QuantizedTensor, which has quantize_; torch's Parameter type does not know it.
            p.quantize_(exact.to(p.device))  # type: ignore[attr-defined]


@dataclass
class Trainer:
    """A built model with its optimizer and precision; ``step`` runs one train step."""

    case: Case
    workload: Workload
    model: torch.nn.Module
    """What a train step calls (possibly compiled or wrapped for data parallelism)."""
    eager: torch.nn.Module
    """The plain module underneath, for validation and FP8 state."""
    optimizer: torch.optim.Optimizer
    precision: Precision
    setup: dict[str, Any] = field(default_factory=dict)
    sleep_s: float = 0.0
    scheduler: Any = None
    """Learning-rate schedule stepped after every optimizer step (None: constant lr)."""

    def step(self, batch: Batch) -> torch.Tensor:
        """Forward, loss, backward, optimizer step. Returns the detached loss (no sync)."""
        self.optimizer.zero_grad(set_to_none=True)
        with self.precision.forward_ctx():
            loss = self.workload.loss(self.model, batch)
        scaler = self.precision.scaler
        clip = self.case.settings.grad_clip
        if scaler is not None:
            scaler.scale(loss).backward()
            if clip:
                scaler.unscale_(self.optimizer)  # clip the true gradients, not the scaled ones
                torch.nn.utils.clip_grad_norm_(self.eager.parameters(), clip)
            scaler.step(self.optimizer)
            scaler.update()
        else:
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(self.eager.parameters(), clip)
            self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()
        if self.sleep_s:
            if batch.inputs.is_cuda:
                torch.cuda._sleep(int(self.sleep_s * 1.4e9))  # ~cycles at H100/H200 clocks; test hook only
            else:
                time.sleep(self.sleep_s)
        return loss.detach()


def _fp8_all_gather(case: Case) -> bool:
    """FSDP2 gathers torchao's FP8 weights in FP8 where torchao can: tensorwise scaling (torchtitan's default)."""
    return case.parallel == "fsdp2" and case.fp8 is not None and case.fp8.recipe == "tensorwise"


def _capture_graphs(trainer: Trainer, batch: Batch) -> None:
    """Capture the layer stack (``model.blocks``) in CUDA graphs.

    TE modules need TE's make_graphed_callables (it handles FP8 scaling state
    inside the graph); plain PyTorch uses torch.cuda.make_graphed_callables.
    Both replace the stack's forward in place and fall back to eager in eval
    mode, so validation still runs the ordinary modules.
    """
    model, wl, prec = trainer.eager, trainer.workload, trainer.precision
    sample = wl.graph_inputs(model, batch)
    blocks = model.blocks
    assert isinstance(blocks, torch.nn.Module), "the graphed stack, model.blocks, is a module"
    # FP8 is not entered here: TE's make_graphed_callables takes the recipe itself.
    with _amp_only(prec):
        if MODES[trainer.case.mode].family == "te":
            model.blocks = te_compat.make_graphed(blocks, sample, prec.fp8_recipe, prec.amax_group)
        else:
            # Given a module, make_graphed_callables returns that module with its forward replaced.
            model.blocks = cast(torch.nn.Module, torch.cuda.make_graphed_callables(blocks, sample, num_warmup_iters=3))


def _amp_only(prec: Precision) -> contextlib.AbstractContextManager:
    if prec.amp_dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(prec.device_type, dtype=prec.amp_dtype, cache_enabled=False)


def build_trainer(case: Case, device: torch.device, batches: list[Batch],
                  wrap: Callable[[torch.nn.Module], torch.nn.Module] | None = None,
                  amax_group: Any = None) -> Trainer:
    """Build model, precision and optimizer for ``case`` on ``device``.

    ``wrap`` lets a distributed run wrap the model (DDP / FSDP2) before the
    optimizer sees its parameters.
    """
    mode = MODES[case.mode]
    wl = WORKLOADS[case.workload]
    size = size_of(case)
    if case.graphs and device.type != "cuda":
        raise RuntimeError("CUDA graphs need a CUDA device")
    precision = make_precision(case, device, amax_group)
    init_ctx: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if case.fp8_weights:
        init_ctx = te_compat.quantized_init(precision.fp8_recipe)
    with init_ctx:
        eager = wl.build(size, mode.family, device, case.settings.seed)
    conversion: dict[str, Any] = {}
    if mode.fp8 == "torchao" and case.fp8 is not None:
        # Before the mutations (they apply to the model as it trains) and before DDP/FSDP2 wraps it.
        conversion = ao_fp8.convert(eager, case.fp8.recipe, fsdp_all_gather=_fp8_all_gather(case))
    mutation = mutation_for(case.id)
    mutated = mutations.apply(mutation, eager, wl, mode.family, case) if mutation else None
    model = wrap(eager) if wrap else eager
    optimizer, opt_name = make_optimizer(model, case, device, mutations.lr_scale(mutation))
    mutations.after_optimizer(mutation, optimizer, eager)
    setup: dict[str, Any] = {
        "family": mode.family,
        "optimizer": opt_name,
        "master_weights": MASTER_WEIGHT_POLICY,
        "compile": None,
        "graphs": None,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32 if device.type == "cuda" else None,
        **precision.describe(),
        **conversion,
    }
    if mode.fp8 == "te":
        setup["fp8_library"] = "te"
    if conversion.get("fp8_fsdp_all_gather"):
        optimizer.register_step_post_hook(lambda *_: ao_fp8.precompute_fsdp_scales(model))
    if mutated:
        setup["test_mutation"] = f"{mutation}: {mutated}"
    if case.fp8_weights:
        refresh_fp8_transposes(optimizer, list(eager.parameters()), setup)
    trainer = Trainer(case, wl, model, eager, optimizer, precision, setup)
    if case.settings.lr_warmup:
        n = case.settings.lr_warmup
        trainer.scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / n))
        setup["lr_schedule"] = f"linear warm-up over {n} steps to {case.settings.lr:g}, then constant"
    if case.settings.grad_clip:
        setup["grad_clip"] = f"torch.nn.utils.clip_grad_norm_(max_norm={case.settings.grad_clip:g}) before each step"
    calibration = case.fp8.calibration_steps if (case.fp8 and mode.fp8 == "te") else 0
    if calibration:
        calibrate_fp8(trainer, batches, calibration)
        setup["fp8_calibration"] = (f"{calibration} forward+backward passes without optimizer steps before "
                                    "training (fills the delayed-scaling amax history)")
    for p, _ in _exact_inits(eager.parameters()):
        del p.tebench_init_fp32  # type: ignore[attr-defined]  # an attribute of our own (init_canonical sets it)
    if mode.compile:
        # "reduce-overhead" is torch.compile's own CUDA-graph mode.
        compile_mode = "reduce-overhead" if case.graphs else "default"
        # Given a module, torch.compile returns one (an OptimizedModule); its stubs say only Callable.
        trainer.model = cast(torch.nn.Module, torch.compile(model, mode=compile_mode))
        setup["compile"] = f"torch.compile(mode={compile_mode!r})"
        if case.graphs:
            setup["graphs"] = "torch.compile(mode='reduce-overhead')"
    elif case.graphs:
        _capture_graphs(trainer, batches[0])
        setup["graphs"] = ("te.make_graphed_callables(model.blocks)" if mode.family == "te"
                           else "torch.cuda.make_graphed_callables(model.blocks)")
    sleep_ms = envvars.step_sleep_ms()  # EnvError naming the variable, its range and the value
    if sleep_ms:
        trainer.sleep_s = sleep_ms / 1000.0
        setup["test_step_sleep_ms"] = sleep_ms
    return trainer
