"""How each case is run: the settings a matrix file sets (``[settings]``, per size), declared once.

The plan builds a case's :class:`Settings` from its matrix file (:func:`tebench.schema.knobs.build` checks
each value against the declarations here), the worker runs by them, and a case record stores them
(:class:`tebench.schema.records.Case`). Torch-free, numpy-free and pydantic-free.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from tebench.schema.knobs import knob


@dataclass(frozen=True)
class Settings:
    """How each case is run. Any of these can be overridden per size."""

    steps: int = knob(50, "Train steps after the warm-up, all timed. Every case trains warmup + steps steps.",
                      min=1, max=1_000_000)
    warmup: int = knob(5, "Train steps run before timing starts (compilation, autotuning, allocator growth); "
                       "with warmup_rule = settled, the most that are left untimed.", min=0, max=1_000_000)
    warmup_rule: str = knob("settled", "settled: timing starts once step times have settled (at least "
                            "warmup_floor steps, at most warmup); the warm-up steps after that point are timed "
                            "too. fixed: exactly warmup steps untimed.", choices=("settled", "fixed"))
    warmup_floor: int = knob(2, "Adaptive warm-up: steps never timed (the first one compiles, autotunes and "
                             "loads kernels).", min=1, max=1_000_000)
    warmup_rtol: float = knob(0.10, "Adaptive warm-up: step times have settled when the last two are within "
                              "this fraction of each other.", min=0.0, max=10.0)
    seed: int = knob(1234, "Seed of weights and data: every mode of a workload sees the same ones.",
                     min=0, max=2**31 - 1)
    lr: float = knob(1e-3, "AdamW learning rate.", min=1e-12, max=10.0)
    lr_warmup: int = knob(0, "Steps of linear learning-rate warm-up from lr/lr_warmup up to lr (0: constant lr); "
                          "wide models need it (at d_model 4096 a full-size first Adam step drives the loss up).",
                          min=0, max=1_000_000)
    adam_beta2: float = knob(0.999, "AdamW's beta2 (the second moment's decay; beta1 is 0.9). Llama-style "
                             "recipes train with 0.95, which keeps a sudden larger gradient from making an outsized "
                             "step after a quiet stretch.", min=0.0, max=0.99999)
    grad_clip: float = knob(0.0, "Clip the gradients' global norm to this before every optimizer step (0: no "
                            "clipping); Llama-style recipes clip at 1.0.", min=0.0, max=1e6)
    timeout_s: float = knob(900.0, "Wall-clock limit of one case's process in seconds, start-up included.",
                            min=1.0, max=7 * 86400.0)
    parity_rtol: float = knob(0.15, "Loss parity: the narrowest the band around the reference curve gets "
                              "(relative); measured noise widens it. 0.15 because PT-AMP ended 9% off PT-FP32 "
                              "on a tiny GPT on an H200.", min=0.0, max=10.0)
    parity_atol: float = knob(0.05, "Loss parity: losses below this count as equal; capped at a tenth of the "
                              "reference's final loss.", min=0.0, max=1e6)
    profile_steps: int = knob(3, "Extra steps run under the profiler on CUDA to measure how busy the GPU is "
                              "(not timed). 0 measures no GPU-busy fraction, but one step is still profiled for "
                              "the time breakdown and the FP8 proof.", min=0, max=10_000)
    scaling_samples: int = knob(8, "How many times over the run FP8 scaling state is sampled.", min=0, max=10_000)
    validate: bool = knob(True, "Run the workload's held-out validation after training (16 forward passes for "
                          "the GPT; part of the convergence verdict).")
    energy_sample_ms: float = knob(100.0, "CUDA cases: how often NVML's power, clocks and clock-event reasons "
                                   "are sampled over the timed steps, in milliseconds (0: the energy counter only).",
                                   min=0.0, max=60_000.0)
    reference_seeds: int = knob(0, "Extra training runs of a reference mode (PT-FP32, PT-AMP) at other seeds, "
                                "untimed, after the case: their spread is the seed-to-seed noise that the "
                                "equivalence verdict compares every mode's difference with (2: three seeds in all).",
                                min=0, max=64)
    reference_twins: int = knob(0, "Extra training runs of a reference mode (PT-FP32, PT-AMP) at the case's own seed, "
                                "weights and batches, each from the initial weights moved by 1 +- twin_scale, "
                                "untimed, after the case: how far two "
                                "equivalent trainings of one seed land apart is the paired noise floor that sets the "
                                "equivalence verdict's power (2: two twins).", min=0, max=64)
    twin_scale: float = knob(2.0 ** -23, "Reference twins: how far each weight of a twin is moved, relative "
                             "(random signs): 2**-23, fp32's last bit, is what a GPU's nondeterministic kernels "
                             "change from one run to the next; 2**-9 is bfloat16's rounding.", min=0.0, max=0.1)
    parity_margin: float = knob(0.01, "Equivalence: the loss difference a pass certifies the case within, as a share "
                                "of the reference's final loss (0.01: NVIDIA's functional tests' 1%); widened, and "
                                "stated, where the paired noise floor cannot resolve it.", min=1e-6, max=1.0)

    @classmethod
    def field_names(cls) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}

    def as_dict(self) -> dict[str, Any]:
        """Every setting by name, in declaration order (as a record stores them)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def defaults(cls) -> Mapping[str, Any]:
        """Every setting's default by name: what a record stored before that setting existed means by its absence."""
        return _SETTING_DEFAULTS


# Read for every record parity groups: built once, read-only.
_SETTING_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {f.name: f.default for f in dataclasses.fields(Settings) if f.default is not dataclasses.MISSING})
