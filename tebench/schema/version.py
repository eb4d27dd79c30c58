"""The results schema's name and version, and the refusal of files this tebench cannot read.

An older tebench refuses a newer file with advice; ``MIN_READABLE_VERSION`` says
which old files are still read (upgrades in :data:`tebench.schema.records.UPGRADES`).
"""

from __future__ import annotations

from typing import Any

from tebench.errors import TebenchError


SCHEMA = "tebench.results"
SCHEMA_VERSION = 1
# Optional keys added within v1, which older readers ignore and newer readers do not require:
# header "excluded" (the matrix's [[exclude]] rules with reason and count of cases removed);
# setup "fp8_library", "fp8_conversion", "fp8_converted", "fp8_fsdp_all_gather" (AO-FP8, 2026-12-02);
# kernels "communication_ms", "communication_exposed_ms" (data-parallel cases, 2026-12-02);
# loss "replicas", "replica_seeds"; validation "heldout_loss", "floor", "unigram_entropy", "uniform_loss",
# "causal_kl", "batch_kl", "replicas"; updates "method"; phases "replicas_s"; parity "rule", "margin_nats",
# "margin_source", "seed_sd", "progress", "progress_nats", "final_window", "gap_trend_nats", "notes";
# fp8_proof "fp8_gemm_call_share", "fp8_linear_flops_share", "outside_recipe" (2026-12-03);
# validation "context_kl", "structure_fp8" (2026-12-03, later); parity "rules" (2026-12-05); parity "spike_step",
# "spike_nats" (2026-12-08). Also new on 2026-12-03: the fp8_proof verdict "partial", which a tebench from before
# refuses in that one record (its reader names the field and skips the line) rather than the whole file.
MIN_READABLE_VERSION = 1
STATUSES = ("ok", "skipped", "failed", "oom", "timeout", "diverged")


class SchemaError(TebenchError, ValueError):
    """A results file this tebench cannot read."""


def check_version(record: dict[str, Any], where: str) -> None:
    """Refuse records from an unknown schema with a clear, actionable message."""
    if record.get("schema") != SCHEMA:
        raise SchemaError(f"{where}: not a tebench results record (schema={_show(record.get('schema'))})")
    version = record.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SchemaError(f"{where}: record has no integer schema_version ([schema_version] = {_show(version)})")
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"{where}: written with results schema v{version}, but this tebench reads up to v{SCHEMA_VERSION}; "
            "upgrade tebench to read it"
        )
    if version < MIN_READABLE_VERSION:
        raise SchemaError(
            f"{where}: results schema v{version} is older than the oldest this tebench reads "
            f"(v{MIN_READABLE_VERSION}); re-render it with the tebench release that wrote it, or re-run"
        )


class RecordError(TebenchError, ValueError):
    """One record that does not have the shape readers rely on; ``key`` names the field."""

    def __init__(self, key: str, value: Any, message: str):
        super().__init__(f"[{key}] = {_show(value)}: {message}" if key else message)
        self.key, self.value = key, value


def _show(value: Any) -> str:
    from tebench.escape import short_repr

    return short_repr(value, 80)
