"""The comparison gate's defaults, importable without numpy: every command's ``--help`` shows them,
and a command that refuses its input should not first pay for the statistics it never runs."""

from __future__ import annotations

DEFAULT_THRESHOLDS = {"time": 0.05, "memory": 0.05, "loss": 0.10, "energy": 0.05}
"""Regression thresholds per metric, as fractions (``--threshold`` overrides them one by one)."""
DEFAULT_ALPHA = 0.05
CORRECTIONS = ("holm", "bh")
MIN_ROUNDS = 3
"""Rounds per side (pairs, when paired) below which a time verdict is ``inconclusive``."""
MIN_STEPS = 5
"""Timed steps a round needs to count as a round."""
