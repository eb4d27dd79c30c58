"""Gates: may this case run on this machine? None, or the reason it may not.

A gate never raises and never guesses: it reads what :mod:`tebench.plan.environment`
found and answers with a sentence a user can act on. Skipped cases carry that
sentence into the results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tebench.plan.modes import MODES
from tebench.plan.recipes import RECIPES
from tebench.workloads import BUILT_IN, SPECS, size_of
from tebench.workloads.spec import workload_kind

if TYPE_CHECKING:  # the type only: --help builds the parser without pydantic
    from tebench.schema.records import Case
    from tebench.schema.environment import Environment


def gate_case(case: Case, env: Environment) -> str | None:
    """None when ``case`` can run on ``env``; otherwise why not."""
    mode = MODES[case.mode]
    reason = mode.gate(env)
    if reason:
        return reason
    if mode.fp8 and case.fp8 is not None:
        reason = RECIPES[case.fp8.recipe].gate(env)
        if reason:
            return reason
        reason = SPECS[case.workload].fp8_problem(size_of(case))
        if reason:
            return reason
    if case.fp8_weights:
        if not ({"quantized_model_init", "fp8_model_init"} & set(env.te_api)):
            return f"FP8 weights need TE's quantized_model_init/fp8_model_init; TE {env.te} has neither"
    if case.graphs:
        if env.device_type != "cuda":
            return "CUDA graphs need a CUDA GPU; none was detected"
        if case.parallel != "single":
            return "CUDA graphs are not supported together with data parallelism in tebench"
    if case.parallel != "single":
        if workload_kind(SPECS[case.workload]) != "model":
            models = ", ".join(name for name in BUILT_IN if workload_kind(SPECS[name]) == "model")
            return f"data parallelism applies to the model workloads ({models}), not to single modules"
        if env.device_type == "cuda" and len(env.gpus) < case.nproc:
            return f"{case.parallel} x{case.nproc} needs {case.nproc} GPUs; {len(env.gpus)} visible"
        if case.parallel == "fsdp2" and not env.fsdp2.ok:
            return env.fsdp2.reason
    return None
