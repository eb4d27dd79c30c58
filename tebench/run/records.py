"""A case record from a worker's raw measurements: statistics, throughput and the divergence check."""

from __future__ import annotations

import time
from typing import Any
from tebench.analysis import parity, stats
from tebench.plan.environment import Environment
from tebench.errors import RunError, StorageError  # noqa: F401  (raised here, caught by the CLI)
from tebench.workloads import SPECS
from tebench.plan.schedule import Planned


def build_record(p: Planned, raw: dict[str, Any], env: Environment, run_id: str, started: float,
                 duration: float, log: str | None) -> dict[str, Any]:
    """A results record from a worker's raw measurements (or its failure)."""
    case = p.case
    record: dict[str, Any] = {
        "type": "case",
        "run_id": run_id,
        "case_id": case.id,
        "round": p.round,
        "case": case.to_dict(),
        "status": raw.get("status", "failed"),
        "reason": raw.get("reason"),
        "device": {"type": env.device_type, "name": env.device_name, **(raw.get("device") or {})},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": round(duration, 3),
        "log": log,
    }
    # `updates` (which parameter tensors training left unchanged) feeds parity's frozen-layer check.
    for key in ("memory", "loss", "validation", "gpu_busy", "fp8_state", "setup", "phases", "distributed",
                "warmup", "launch", "updates"):
        if raw.get(key) is not None:
            record[key] = raw[key]
    timing = raw.get("timing")
    if timing:
        summary = stats.summarize(timing["samples_ms"])
        record["timing"] = {**timing, "stats": summary}
        wl = SPECS[case.workload]
        size = case.size_spec
        tokens = wl.tokens_per_step(size) * case.nproc
        flops = wl.flops_per_step(size) * case.nproc
        if summary.get("median"):
            record["throughput"] = stats.throughput(summary["median"], tokens, flops, env.peak_tflops, case.nproc)
    if record["status"] == "ok" and raw.get("loss"):
        why = parity.divergence(raw["loss"]["per_step"])
        if why:
            record["status"], record["reason"] = "diverged", why
    if raw.get("loss"):
        losses = raw["loss"]["per_step"]
        record["loss"]["first"] = losses[0] if losses else None
        record["loss"]["final"] = parity.final_loss(losses)
    return record
