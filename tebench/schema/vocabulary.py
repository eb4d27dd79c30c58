"""The fixed words a record stores: the values a field of a results file may hold.

They live here, at the bottom of the layers, so that the record declarations can name them
without reaching up into the plan or the analysis that also use them. The registries that grow
(modes, recipes, workloads) stay where they are defined; a record's mode and recipe are checked
against them by :mod:`tebench.plan.record_checks`.
"""

from __future__ import annotations

FORMATS = ("E4M3", "HYBRID")
"""TE's FP8 formats a delayed-scaling recipe may name."""
AMAX_ALGOS = ("max", "most_recent")
"""Delayed scaling's ways to reduce the amax history."""
PARALLEL = ("single", "ddp", "fsdp2")
"""How a case spreads over GPUs."""
JUDGED = ("pass", "fail", "inconclusive")
"""The verdicts of a judged case (``reference`` and ``n/a`` were not judged)."""
PARITY_VERDICTS = (*JUDGED, "reference", "n/a")
"""Every loss-parity verdict a record may store: a word outside them ("PASS", "") would be counted as neither a pass
nor a fail, and a comparison would say nothing of it."""

MAX_ROUNDS = 1000
"""The most rounds a run may have (``--rounds``): far beyond any real use, it bounds what a typo (an extra zero
or ten) or a damaged header can make a reader or writer allocate."""
