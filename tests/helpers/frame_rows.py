"""Rows of the report's case table as ``tables.case_frame`` builds them, for tests of what the report picks."""

from __future__ import annotations

import pandas as pd

from tebench.report import tables


def case_row(size: str, variant: str, ms: float, parity: str | None, *, rel: float | None = None,
             spread: float = 0.002, proof: str | None = None, flops: float = 1e12, parallel: str = "single",
             nproc: int = 1, tokens_per_j: float | None = None) -> dict:
    """One case's row (before the baselines are joined): one round of samples ``spread`` wide around ``ms``.

    Memory grows with the step time, so that a faster case is also the smaller one unless a test says so.
    """
    samples = [ms * (1 + spread * ((k % 5) - 2)) for k in range(30)]
    q = pd.Series(samples).quantile([0.25, 0.75])
    return {"source": "H200", "workload": "gpt", "size": size, "mode": variant.split("/", 1)[0],
            "variant": variant, "case_id": f"gpt/{size}/{variant}", "recipe": None, "graphs": False,
            "fp8_weights": False, "parallel": parallel, "nproc": nproc, "status": "ok", "reason": None, "rounds": 1,
            "median_ms": ms, "iqr_ms": float(q.iloc[1] - q.iloc[0]), "samples_ms": [samples],
            "memory_bytes": 1e9 * ms / 100, "flops_per_step": flops, "final_loss": 3.0, "parity": parity,
            "parity_rel_diff": rel, "parity_reason": f"{parity} for the test", "fp8_proof": proof,
            "tokens_per_j": tokens_per_j, "gpu_busy": 0.95}


def case_table(rows: list[dict]) -> pd.DataFrame:
    """The rows with their baselines joined, in the report's order."""
    return tables.order_rows(tables._add_baselines(pd.DataFrame(rows)))
