"""Case records that carry a loss curve and little else: what the loss-parity verdicts are judged from."""

from __future__ import annotations

from tebench.schema.records import CaseResult, Validation


def loss_record(mode: str, losses: list[float], status: str = "ok", graphs: bool = False, round_: int = 0,
                validation: Validation | None = None, mutation: str | None = None, steps: int = 50,
                **case: object) -> CaseResult:
    """A ``gpt/s/<mode>`` record with these per-step losses; ``case`` adds or replaces fields of its case."""
    return CaseResult.from_dict({
        "case_id": f"gpt/s/{mode}", "status": status, "round": round_,
        "case": {"workload": "gpt", "size": "s", "mode": mode, "dims": {"d": 1}, "graphs": graphs,
                 "parallel": "single", **case,
                 "settings": {"seed": 1, "steps": steps, "warmup": 10, "lr": 1e-3, "parity_rtol": 0.1,
                              "parity_atol": 0.05}},
        "loss": {"per_step": losses},
        "validation": validation.to_dict() if validation else {},
        "setup": {"test_mutation": mutation} if mutation else {},
    })
