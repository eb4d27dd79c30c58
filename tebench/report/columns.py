"""The report's column specs: (frame column, heading, format) of each table the report module builds.

Formats are those of :func:`tebench.report.tables.fmt`; a table shown for one
machine drops its "source" column (:func:`tebench.report.context.both`).
"""

from __future__ import annotations

from tebench.report import tables
from tebench.schema.part import shown
from tebench.schema.records import Phases

FP8 = " or ".join(tables.TE_FP8_MODES)
"""How headings name TE's FP8 mode (``TE-FP8``); torchao's columns name ``AO-FP8``."""
AO_FP8 = " or ".join(tables.AO_FP8_MODES)

HEADLINE_COLUMNS = [
    ("source", "machine", ""), ("workload", "workload", ""), ("size", "size", ""),
    ("fastest", "fastest mode", ""), ("step_ms", "step ms", "ms"), ("speedup_vs_amp", f"vs {tables.BASELINE}", "x"),
    ("speedup_vs_compile", f"vs {tables.COMPILED}", "x"), ("noise", "noise", ""),
    # Signed ("−12%", "+1.9%"): a column named "saved" showed -1.9% where the fastest used more.
    ("memory_change", f"memory vs {tables.BASELINE}", "change"),
    # Cases passed over because they do not count (loss parity not passed, GEMMs not all FP8), each faster
    # than its pool's pick (fastest, best TE-FP8, best AO-FP8) or the fastest of a pool with no pick.
    ("faster_not_passing", "passed over (parity, FP8 proof)", ""),
    ("best_fp8", f"best {FP8}", ""), ("fp8_speedup_vs_amp", f"{FP8} vs {tables.BASELINE}", "x"),
    # torchao's columns exist only where a torchao case ran (tables.headline), so older reports keep their shape.
    ("best_ao_fp8", f"best {AO_FP8}", ""), ("ao_fp8_speedup_vs_amp", f"{AO_FP8} vs {tables.BASELINE}", "x"),
    ("ao_fp8_speedup_vs_compile", f"{AO_FP8} vs {tables.COMPILED}", "x"),
    ("te_vs_ao", f"{FP8} vs {AO_FP8}", "x"), ("te_parity", f"{FP8} parity", ""), ("ao_parity", f"{AO_FP8} parity", ""),
    ("te_vs_ao_passing", f"{FP8} vs {AO_FP8}, fastest passing parity", "x"),
    ("parity", "loss parity", ""), ("not_ok", "not ok", ""),
]
CROSSOVER_COLUMNS = [
    ("source", "machine", ""), ("workload", "workload", ""), ("cuda_graphs", "CUDA graphs", ""),
    ("baseline", "baseline", ""), ("fp8_first_faster_at", f"{FP8} first faster at", ""),
    ("speedup_there", "speedup there", "x"), ("speedup_by_size", f"{FP8} speedup by size", ""),
]
CROSSOVER_BOTH_COLUMNS = [
    ("source", "machine", ""), ("workload", "workload", ""), ("cuda_graphs", "CUDA graphs", ""),
    ("baseline", "baseline", ""), ("fp8", "FP8 mode", ""), ("fp8_first_faster_at", "first faster at", ""),
    ("speedup_there", "speedup there", "x"), ("speedup_by_size", "speedup by size", ""),
]
"""The crossover with torchao's cases beside TE's: one row per FP8 library."""
DIST_COLUMNS = [
    ("source", "machine", ""), ("case_id", "case", ""), ("status", "status", ""), ("ranks", "ranks", ""),
    ("per_rank_tokens_per_s", "tokens/s per rank", ""), ("aggregate_tokens_per_s", "aggregate tokens/s", "int"),
    ("one_gpu_tokens_per_s", "same case, 1 GPU", "int"), ("scaling_efficiency", "scaling efficiency", "pct"),
    ("replicas_in_sync", "replicas identical (DDP)", ""), ("rank0_final_loss", "rank-0 final loss", "loss"),
    # From the profiled extra step's NCCL kernels; shown only where a record measured them.
    ("communication_share", "communication share of the step", "pct"),
    ("communication_overlapped", "of it hidden by compute", "pct"),
]
BUSY_COLUMNS = [
    ("case_id", "case", ""), ("source", "machine", ""), ("median_ms", "step ms", "ms"),
    ("gpu_busy", "GPU busy", "pct"), ("bound", "label", ""),
]


COST_COLUMNS = [
    ("mode", "mode", ""), ("source", "machine", ""), ("cases", "cases", "int"),
    # one column per phase the schema declares (tebench.schema.records.Phases)
    *((name, meta["column"], "s") for name, meta in shown(Phases)),
    ("other_s", "other s", "s"), ("duration_s", "case time s", "s"), ("measured_share", "measured", "pct"),
]
