"""The options of one point on the FP8 recipe axes, declared once: the matrix's ``[fp8]`` lists and a record's
``fp8`` part both take their defaults, docs and limits from :class:`FP8Point`.

The matrix checks a value against every limit here (:mod:`tebench.plan.matrix`); a record, valid under the
upper limits of its day, against the lower ones and the choices (:class:`tebench.schema.records.FP8Options`).
A recipe's name is checked against the plan's registry of recipes, which this layer cannot see.
Torch-free, numpy-free and pydantic-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from tebench.schema.knobs import knob
from tebench.schema.vocabulary import AMAX_ALGOS, FORMATS


@dataclass(frozen=True)
class FP8Point:
    """One value of each FP8 option."""

    recipe: str = knob("delayed", "An FP8 recipe's registry name: TE's (for TE-FP8) or torchao's (for AO-FP8); an "
                                  "FP8 mode whose library has none listed gets its default (delayed, tensorwise).")
    format: str = knob("HYBRID", "FP8 format: E4M3, or HYBRID (E4M3 forward, E5M2 backward).", choices=FORMATS)
    amax_history_len: int = knob(1024, "Delayed scaling: length of the amax history.", min=1, max=65536)
    amax_compute_algo: str = knob("max", "Delayed scaling: how the amax history becomes a scale.", choices=AMAX_ALGOS)
    calibration_steps: int = knob(0, "Delayed scaling: calibration passes (forward and backward, no optimizer step) "
                                     "before training, so that the recipe starts from measured amaxes (0: none). "
                                     "With 0, TE's first step quantizes with the initial scale of 1: on the H200 "
                                     "that zeroed (E4M3) or scrambled (HYBRID) the TE layers' first gradients "
                                     "(docs/findings/fp8-calibration.md).", min=0, max=10_000)
