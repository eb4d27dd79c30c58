"""A case record from a worker's measurements: statistics, throughput and the divergence check."""

from __future__ import annotations

import time
from typing import Any

from tebench.analysis import parity, stats
from tebench.plan.environment import Environment
from tebench.plan.schedule import Planned
from tebench.schema.records import CaseResult, Device, Measurements, Summary, Throughput
from tebench.schema.version import RecordError
from tebench.workloads import SPECS


def measurements(raw: Any) -> Measurements:
    """A worker's result file, checked against the declarations: a damaged one is a failed case, never a crash.

    A worker that writes a value of the wrong type (a bug in a workload, a plugin,
    a new measurement) is caught here with the field's path, before any
    statistic is computed from it.
    """
    try:
        Measurements.check(raw)
    except RecordError as exc:
        return Measurements(status="failed", reason=f"the worker's result does not have the declared shape: {exc}")
    return Measurements.from_dict(raw)


def build_record(p: Planned, raw: Measurements, env: Environment, run_id: str, started: float,
                 duration: float, log: str | None) -> CaseResult:
    """The case record of a worker's measurements (or its failure).

    Every field :class:`Measurements` declares is carried over: a new
    measurement needs no change here.
    """
    case = p.case
    record = CaseResult(**{name: getattr(raw, name) for name in Measurements.measured()},
                        type="case", run_id=run_id, case_id=case.id, round=p.round, case=case.to_dict(),
                        started=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
                        duration_s=round(duration, 3), log=log)
    # Where the worker did not say (a skip, a crash before its first line), the machine's device.
    device = record.device or Device()
    device.type = device.type or env.device_type
    device.name = device.name or env.device_name
    record.device = device
    if record.timing and record.timing.samples_ms:
        summary = stats.summarize(record.timing.samples_ms)
        record.timing.stats = Summary.from_dict(summary)
        wl = SPECS[case.workload]
        size = case.size_spec
        tokens = wl.tokens_per_step(size) * case.nproc
        flops = wl.flops_per_step(size) * case.nproc
        if summary.get("median"):
            record.throughput = Throughput.from_dict(
                stats.throughput(summary["median"], tokens, flops, env.peak_tflops, case.nproc))
    if record.loss:
        losses = record.loss.per_step
        if record.status == "ok":
            why = parity.divergence(losses)
            if why:
                record.status, record.reason = "diverged", why
        record.loss.first = losses[0] if losses else None
        record.loss.final = parity.final_loss(losses)
    return record
