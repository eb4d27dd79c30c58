"""Loss parity as an equivalence test: is a case's held-out loss within a stated margin of the reference's?

Used where the task has a known floor (the zipf-markov source: every training
batch is a fresh draw, so the loss a step computes before its update is a
held-out loss) and the reference trained at several seeds (``reference_seeds``).
The question is MLPerf's and DeepSeek-V3's rather than "did the curve ever leave
a band": over the last part of the run, is the case's loss as close to the
reference's (same seed, same weights, same batches) as a correct run can be
expected to land?

* **The gap** is the case's mean loss minus the reference's over the final
  window (the last quarter of the steps), in nats.
* **The margin** is the largest of: :data:`MARGIN_PROGRESS` of the progress the
  reference made by then (how far its loss fell from the start), :data:`SEED_K`
  times the spread of the reference's seeds over the same window, and
  :data:`MIN_MARGIN`. It is stated in nats and as a share of progress.
* ``pass``: the gap is within the margin (an early excursion that rejoins, or a
  gap growing over the second half, is a note on the pass);
  ``fail``: the gap is beyond it, either way (learning faster than the
  reference is a difference, not a win), or the loss is below the floor, which
  no model reaches without a leak;
  ``inconclusive``: too early on the curve to say (the reference came less than
  :data:`MIN_PROGRESS` of its way to the floor, or no further than its own seed
  noise), or too short a run. Never a pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from tebench.schema.records import Parity, ValidationVerdict

MIN_STEPS = 8
"""Fewer losses than this cannot be judged."""
FINAL_FRACTION = 0.25
"""The final window: this share of the steps (at least 3)."""
MARGIN_PROGRESS = 0.02
"""The margin is at least this share of the reference's progress (its fall from the start)."""
SEED_K = 3.0
"""... and at least this many standard deviations of the reference's seeds (3 seeds: a wide estimate)."""
MIN_MARGIN = 0.005
"""... and never below this (nats): rounding and the batches' sampling noise."""
MIN_PROGRESS = 0.10
"""A reference that came less than this share of the way from the start to the floor is too early to judge."""
EXCURSION_FRACTION = 0.04
"""An early excursion is this share of the steps (at least 2) outside the margin in a row."""


def smooth(values: Sequence[float] | np.ndarray, width: int) -> np.ndarray:
    """Centred moving average of ``width`` steps, same length, edges padded."""
    a = np.asarray(values, dtype=float)
    if width < 2 or a.size < width:
        return a
    left = width // 2
    padded = np.pad(a, (left, width - 1 - left), mode="edge")
    return np.convolve(padded, np.ones(width) / width, mode="valid")


@dataclass(frozen=True)
class Margin:
    """The margin at the end of the run and what set it (nats)."""

    nats: float
    progress: float
    """The reference's fall from its start over the run (nats)."""
    seed_sd: float
    """Standard deviation of the seeds' final-window means (nats)."""
    seeds: int

    @property
    def source(self) -> str:
        """Which term set the margin, in words."""
        terms = {f"{MARGIN_PROGRESS:.0%} of the reference's {self.progress:.3g}-nat fall": MARGIN_PROGRESS * self.progress,
                 f"{SEED_K:g}x the spread of its {self.seeds} seeds (sd {self.seed_sd:.3g})": SEED_K * self.seed_sd,
                 f"the least margin {MIN_MARGIN:g}": MIN_MARGIN}
        return max(terms, key=terms.__getitem__)


def _window(n: int) -> slice:
    return slice(n - max(3, int(round(FINAL_FRACTION * n))), n)


def longest_run(mask: np.ndarray) -> tuple[int, int]:
    """Length and first index of the longest run of True in ``mask``."""
    best, start, run = 0, 0, 0
    for i, bad in enumerate(mask):
        run = run + 1 if bad else 0
        if run > best:
            best, start = run, i - run + 1
    return best, start


def judge(losses: Sequence[float], reference: Sequence[float], replicas: Sequence[Sequence[float]],
          floor: float | None, reference_mode: str) -> Parity:
    """The equivalence verdict of one loss curve against the reference's (same seed) and its seeds' spread.

    ``reference`` is the reference mode's curve at the case's seed; ``replicas``
    its curves at other seeds (at least two make three seeds); ``floor`` the
    task's entropy rate (None: no floor check, progress relative to the start).
    """
    # Each verdict is made from one object, so that it is stored with its keys in this order.
    curves = [list(c) for c in (reference, *replicas)]
    n = min(len(losses), *(len(c) for c in curves))
    out: dict[str, Any] = {"rule": "equivalence", "reference_mode": reference_mode, "reference_rounds": len(curves),
                           "floor": floor}
    if n < MIN_STEPS:
        return Parity.from_dict({**out, "verdict": "inconclusive",
                                 "reason": f"run too short to judge: {n} losses recorded, {MIN_STEPS} needed"})
    case = np.asarray(losses[:n], dtype=float)
    seeds = np.asarray([c[:n] for c in curves], dtype=float)
    if not np.all(np.isfinite(case)):
        return Parity.from_dict({**out, "verdict": "fail", "reason": "the loss is not finite"})
    win = _window(n)
    k = win.stop - win.start
    start = float(np.mean(seeds[:, 0]))
    ref_end = float(np.mean(seeds[0, win]))
    case_end = float(np.mean(case[win]))
    seed_means = seeds[:, win].mean(axis=1)
    seed_sd = float(np.std(seed_means, ddof=1)) if len(seed_means) > 1 else 0.0
    progress = start - ref_end
    margin = Margin(max(MARGIN_PROGRESS * max(progress, 0.0), SEED_K * seed_sd, MIN_MARGIN), progress, seed_sd,
                    len(curves))
    gap = case_end - ref_end
    out.update(final=case_end, reference_final=ref_end, abs_diff=gap,
               rel_diff=gap / abs(ref_end) if ref_end else None, direction="higher" if gap > 0 else "lower",
               tolerance=margin.nats, margin_nats=margin.nats, margin_source=margin.source,
               seed_sd=seed_sd, progress_nats=progress, final_window=[win.start, n - 1],
               band_rel=margin.nats / abs(ref_end) if ref_end else None)
    if floor is not None and start > floor:
        out["progress"] = (start - ref_end) / (start - floor)

    # Too early on the curve: a difference there says nothing about the model the run trains.
    way = f"{out['progress']:.0%} of the way from {start:.3g} to the floor {floor:.3g}" if "progress" in out else \
        f"from {start:.3g} to {ref_end:.3g}"
    if progress <= SEED_K * seed_sd or ("progress" in out and out["progress"] < MIN_PROGRESS):
        return Parity.from_dict({**out, "verdict": "inconclusive",
                                 "reason": (f"too early on the curve to judge: the {reference_mode} reference came "
                                            f"{way} (needs {MIN_PROGRESS:.0%}, and a fall beyond {SEED_K:g}x its seed "
                                            f"spread {seed_sd:.3g}); train longer (settings steps)")})

    failures: list[str] = []
    notes: list[str] = []
    if floor is not None:
        slack = max(0.02, 3.0 * float(np.std(case[win], ddof=1)) / math.sqrt(k))
        if case_end < floor - slack:
            failures.append(f"loss {case_end:.4g} over steps {win.start}-{n - 1} is below the task's floor "
                            f"{floor:.4g} (its entropy rate) by {floor - case_end:.3g} nats: no model gets there "
                            "without seeing what it must predict (a leak)")
    if abs(gap) > margin.nats:
        failures.append(f"loss {'higher' if gap > 0 else 'lower'} than {reference_mode}'s by {abs(gap):.3g} nats over "
                        f"steps {win.start}-{n - 1} ({case_end:.4g} vs {ref_end:.4g}), beyond the margin "
                        f"±{margin.nats:.3g} ({margin.source})")

    # The trend over the second half, and excursions before the final window, from smoothed curves.
    width = max(1, n // 15)
    diff = smooth(case, width) - smooth(seeds[0], width)
    half = np.arange(n // 2, n)
    if half.size >= 3:
        slope = float(np.polyfit(half, diff[half], 1)[0])
        change = slope * (half.size - 1)
        out["gap_trend_nats"] = change
        if abs(change) > margin.nats / 2 and np.sign(change) == np.sign(diff[-1]) and abs(diff[-1]) > margin.nats / 4:
            notes.append(f"the gap grew by {change:+.3g} nats over the second half")
    progress_t = np.maximum(seeds[0, 0] - smooth(seeds[0], width), 0.0)
    spread_t = np.std(np.array([smooth(c, width) for c in seeds]), axis=0, ddof=1) if len(seeds) > 1 else 0.0
    margin_t = np.maximum.reduce([MARGIN_PROGRESS * progress_t, SEED_K * spread_t, np.full(n, MIN_MARGIN)])
    early = np.abs(diff[: win.start]) > margin_t[: win.start]
    run, run_start = longest_run(early)
    if run >= max(2, math.ceil(EXCURSION_FRACTION * n)):
        peak = run_start + int(np.argmax(np.abs(diff[run_start:run_start + run])))
        out["excursion"] = {"start": run_start, "steps": run, "side": "above" if diff[peak] > 0 else "below",
                            "peak_step": peak}
        notes.append(f"an early excursion at steps {run_start}-{run_start + run - 1} ({diff[peak]:+.3g} nats at "
                     f"step {peak}) that rejoined" if not failures else
                     f"outside the margin earlier too, steps {run_start}-{run_start + run - 1}")
    out["notes"] = notes
    tail = ("; " + "; ".join(notes)) if notes else ""
    if failures:
        return Parity.from_dict({**out, "verdict": "fail", "reason": "; ".join(failures) + tail})
    return Parity.from_dict({**out, "verdict": "pass",
                             "reason": (f"loss within ±{margin.nats:.3g} nats of {reference_mode}'s over steps "
                                        f"{win.start}-{n - 1} (gap {gap:+.3g}; margin: {margin.source}); the "
                                        f"reference came {way}{tail}")})


def judge_validation(value: float | None, reference: float | None, replicas: Sequence[float],
                     floor: float | None, margin: float, metric: str) -> ValidationVerdict:
    """A held-out loss against the reference's, within the curve's margin or the seeds' own spread if wider."""
    # Each verdict is made from one object, so that it is stored with its keys in this order.
    if value is None or reference is None:
        return ValidationVerdict.from_dict({"verdict": "n/a", "reason": "no held-out value recorded", "metric": metric})
    out: dict[str, Any] = {"metric": metric, "value": float(value), "reference": float(reference)}
    if not math.isfinite(value):
        return ValidationVerdict.from_dict({**out, "verdict": "fail", "reason": f"{metric} is {value}"})
    values = [reference, *replicas]
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    tol = max(margin, SEED_K * sd, MIN_MARGIN)
    out["tolerance"] = tol
    if floor is not None and value < floor - 0.02:
        return ValidationVerdict.from_dict({**out, "verdict": "fail", "reason": f"held-out {metric} {value:.4g} is "
                                                                                f"below the task's floor {floor:.4g}: "
                                                                                "a leak"})
    ok = abs(value - reference) <= tol
    return ValidationVerdict.from_dict({**out, "verdict": "pass" if ok else "fail",
                                        "reason": f"held-out {metric} {value:.4g} vs {reference:.4g} (margin "
                                                  f"±{tol:.3g} nats)"})
