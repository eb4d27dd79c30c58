"""A case record from a worker's measurements: statistics, throughput and the divergence check."""

from __future__ import annotations

import time
from typing import Any, TYPE_CHECKING

from tebench.analysis import breakdown, parity
from tebench.plan.modes import MODES, fp8_library, is_fp8
from tebench.plan.schedule import Planned
from tebench.schema.records import CaseResult, Device, Measurements, Summary, Throughput
from tebench.schema.version import RecordError
from tebench.workloads import SPECS, size_of

if TYPE_CHECKING:  # the type only: --help builds the parser without pydantic
    from tebench.schema.environment import Environment


def measurements(raw: Any) -> Measurements:
    """A worker's result file, checked against the declarations: a damaged one is a failed case, never a crash.

    A worker that writes a value of the wrong type (a bug in a workload, a plugin,
    a new measurement) is caught here with the field's path, before any
    statistic is computed from it.
    """
    try:
        return Measurements.from_dict(raw)  # validated once: from_dict checks what check() would
    except RecordError as exc:
        return Measurements(status="failed", reason=f"the worker's result does not have the declared shape: {exc}")


def build_record(p: Planned, raw: Measurements, env: Environment, run_id: str, started: float,
                 duration: float, log: str | None) -> CaseResult:
    """The case record of a worker's measurements (or its failure).

    Every field :class:`Measurements` declares is carried over: a new
    measurement needs no change here.
    """
    case = p.case
    record = CaseResult(**{name: getattr(raw, name) for name in Measurements.measured()},
                        type="case", run_id=run_id, case_id=case.id, round=p.round,
                        case=case,
                        started=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
                        duration_s=round(duration, 3), log=log)
    # Where the worker did not say (a skip, a crash before its first line), the machine's device.
    device = record.device or Device()
    device.type = device.type or env.device_type
    device.name = device.name or env.device_name
    record.device = device
    if record.timing and record.timing.samples_ms:
        summary = record.timing.stats = Summary.of(record.timing.samples_ms)
        wl = SPECS[case.workload]
        size = size_of(case)
        tokens = wl.tokens_per_step(size) * case.nproc
        flops = wl.flops_per_step(size) * case.nproc
        if summary.median:
            record.throughput = Throughput.of(summary.median, tokens, flops, env.peak_tflops, case.nproc)
            record.time_breakdown = breakdown.breakdown_of(record, env.peak_tflops)
    prove_te(record)
    en = record.energy
    if en is not None and en.energy_j and en.steps and record.throughput and record.throughput.tokens_per_step:
        # One rank's GPU measured its own energy: its share of the tokens (tokens_per_step counts all ranks).
        en.tokens_per_j = record.throughput.tokens_per_step / case.nproc * en.steps / en.energy_j
    prove_fp8(record)
    if record.loss:
        losses = record.loss.per_step
        if record.status == "ok":
            why = parity.divergence(losses)
            if why:
                record.status, record.reason = "diverged", why
        record.loss.first = losses[0] if losses else None
        record.loss.final = parity.final_loss(losses)
    return record


def is_fp8_case(record: CaseResult) -> bool:
    """Whether the case's mode quantizes its GEMMs with a recipe (TE-FP8 and any FP8 mode)."""
    return is_fp8(record.mode) and bool(record.fp8)


def _no_fp8_hint(mode: str) -> str:
    """What usually makes a case of ``mode`` compute without FP8, for the failed case's reason."""
    if fp8_library(mode) == "torchao":
        return "(no linear layer converted to Float8Linear, or their forward replaced?)"
    return "(a workload that builds torch.nn layers, or calls TE layers outside FP8 autocast?)"


NOT_TE_REASON = ("not a TE result: the model has no Transformer Engine module (the workload built torch.nn "
                 "layers?); kept out of every figure")


def prove_te(record: CaseResult) -> None:
    """A case of a TE-family mode whose model ran no Transformer Engine module is failed: its times are plain
    PyTorch's under a TE label.

    Only an observed census counts: under CUDA graphs or torch.compile the hooks see nothing, and zero
    modules there means unknown, not none.
    """
    mode = MODES.get(record.mode)
    census = record.modules
    if mode is None or mode.family != "te" or census is None or not census.observed or record.status != "ok":
        return
    if (census.te_fp8 or 0) == 0 and (census.te_high_precision or 0) == 0 and (census.te_other or 0) == 0:
        record.status, record.reason = "failed", NOT_TE_REASON


def prove_fp8(record: CaseResult) -> None:
    """An FP8 case whose GEMMs all ran in high precision is not an FP8 result: it is failed, saying what ran.

    Evidence comes from the profiled extra steps (every CUDA case profiles at
    least one); a case with none (a CPU, a crash before it) gets no proof. A
    ``partial`` case (FP8 covered too little of the model) stays ``ok``: it
    trained and was timed, and its record says why it is in no FP8 figure.
    """
    if not is_fp8_case(record) or (record.kernels is None and record.modules is None):
        return
    proof = breakdown.fp8_proof(record.kernels, record.modules)
    record.fp8_proof = proof
    if proof.verdict == "no-fp8" and record.status == "ok":
        record.status = "failed"
        record.reason = (f"not an FP8 result: {proof.note}. It is kept out of every FP8 figure "
                         + _no_fp8_hint(record.mode))
    elif proof.verdict == "partial" and not record.reason:
        record.reason = (f"partial FP8: {proof.note}. It is kept out of every FP8 figure "
                         + _no_fp8_hint(record.mode))
