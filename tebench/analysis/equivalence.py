"""Loss parity as an equivalence test with three outcomes and a stated power.

Used where the reference trained *twins* (a task with or without a known floor),
or where the task has a known floor (the zipf-markov source: every training
batch is a fresh draw, so the loss a step computes before its update is a
held-out loss) and the reference trained other seeds. The extra runs: *twins* (its own seed,
weights and batches, the weights perturbed by their last bit) or, in records
from before them, *replicas* (other seeds). The question is NVIDIA's functional
tests' and DeepSeek-V3's: over the last part of the run, is the case's loss
within a stated share of the reference's, and can this run tell?

* **The gap** is the case's mean loss minus the reference's over the final
  window (the last quarter of the steps), in nats. The case and the reference
  share the seed, the weights and the batches, so the gap is *paired*.
* **The noise** of the gap is the paired noise floor: the root mean square of
  the twins' gaps from the reference (how far two equivalent trainings of the
  same seed land apart), or the case's own window standard error if larger.
  Without twins it is the spread of the replicas' seeds (unpaired, and far
  wider: it holds the seed's own effect, which a paired gap does not have).
* **The margin** is what a verdict certifies: the ``parity_margin`` setting's
  share of the reference's final loss (1%), widened to :data:`NOISE_K` times
  the noise where the noise cannot resolve that (it is stated either way).
* ``pass``: the gap's interval (:data:`Z` noise either way) lies within the
  margin: the case is within it. ``fail``: the interval lies beyond it, either
  way (learning faster than the reference is a difference, not a win), or the
  loss is below the floor, which no model reaches without a leak.
  ``inconclusive``: the interval straddles the margin's edge (a case there must
  not flip between pass and fail from night to night), or it is too early on
  the curve to judge (the reference came less than :data:`MIN_PROGRESS` of its
  way to the floor, or no further than its noise, or its loss is not yet below
  the task's unigram entropy), or the run is too short. Never a pass.

A reference above the unigram entropy has learned the tokens' frequencies and
nothing that needs the context: its predictions barely move when the tokens
before them change. A gap there measures how fast the output layer learns a
frequency table, not whether attention and the MLPs train the same model, so
a verdict there would certify nothing a user asks of it.
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
MARGIN_REL = 0.01
"""The margin's default share of the reference's final loss (the ``parity_margin`` setting)."""
Z = 2.0
"""The gap's interval is this many noise sds either way (two one-sided tests at about 2.3% each)."""
NOISE_K = 2 * Z
"""The margin is at least this many noise sds: a correct case (its gap within Z sds, 95%) then passes."""
MIN_MARGIN = 0.005
"""... and never below this (nats): rounding and the batches' sampling noise."""
MIN_PROGRESS = 0.10
"""A reference that came less than this share of the way from the start to the floor is too early to judge."""
EXCURSION_FRACTION = 0.04
"""An early excursion is this share of the steps (at least 2) outside the margin in a row."""
SPIKE_MARGINS = 2.0
"""A loss spike: the gap rose in one step by more than this many margins ...
"""
SPIKE_MOVES = 10.0
"""... and by more than this many times the gap's typical one-step move (the median), and the twins' gaps' (where
there are twins) ...
"""
SPIKE_REFERENCE_RISES = 2.0
"""... and the case's own loss rose by more than this many times the reference's own largest one-step rise: a bump
the reference has too, a step earlier or later in the case, is no spike of the case."""


def smooth(values: Sequence[float] | np.ndarray, width: int) -> np.ndarray:
    """Centred moving average of ``width`` steps, same length, edges padded."""
    a = np.asarray(values, dtype=float)
    if width < 2 or a.size < width:
        return a
    left = width // 2
    padded = np.pad(a, (left, width - 1 - left), mode="edge")
    return np.convolve(padded, np.ones(width) / width, mode="valid")


@dataclass(frozen=True)
class Noise:
    """The noise of a final-window gap: the reference's noise floor, the case's own, and where they came from."""

    floor: float
    """The reference's: the twins' rms gap (paired), else its seeds' spread (unpaired). Sets the margin."""
    own: float
    """The case's own window standard error (its paired per-step differences)."""
    source: str
    """In words: twins (paired) or seeds (unpaired), and how many."""
    paired: bool

    @property
    def nats(self) -> float:
        """The gap's noise: the larger of the two. Sets the interval."""
        return max(self.floor, self.own)


def noise_of(case_window: np.ndarray, ref_window: np.ndarray, twins: np.ndarray, seeds: np.ndarray) -> Noise:
    """The noise of a gap: the twins' gaps (rms), else the seeds' spread, and the case's own window standard error.

    ``twins`` and ``seeds``: their final windows, one row each (empty arrays where there are none).
    """
    d = case_window - ref_window
    own = float(np.std(d, ddof=1) / math.sqrt(d.size)) if d.size > 1 else 0.0
    if len(twins):
        rms = float(np.sqrt(np.mean((twins.mean(axis=1) - ref_window.mean()) ** 2)))
        return Noise(rms, own, f"the rms gap {rms:.2g} of its {len(twins)} twin(s): same seed and batches, "
                               "perturbed weights", True)
    if len(seeds) >= 2:
        sd = float(np.std(seeds.mean(axis=1), ddof=1))
        return Noise(sd, own, f"the spread {sd:.2g} of its {len(seeds)} seeds (unpaired: no twins)", False)
    return Noise(0.0, own, "no twins or seeds", True)


@dataclass(frozen=True)
class Margin:
    """The margin a verdict certifies (nats), and what set it."""

    nats: float
    share: float
    """The share of the reference's final loss it was asked to be (parity_margin)."""
    noise: Noise
    ref_end: float
    least: float = MIN_MARGIN
    """The least margin: :data:`MIN_MARGIN` in nats; 0 for a loss in other units (no floor: a regression loss)."""

    @property
    def rel(self) -> float | None:
        """The margin as a share of the reference's final loss."""
        return self.nats / abs(self.ref_end) if self.ref_end else None

    @property
    def widened(self) -> bool:
        """Whether the reference's noise floor, not the asked share, set the margin."""
        return self.nats > self.share * abs(self.ref_end) + 1e-15 and self.nats > self.least

    @property
    def source(self) -> str:
        """Which term set the margin, in words."""
        if self.widened:
            return (f"{NOISE_K:g}x the noise floor {self.noise.floor:.2g} ({self.noise.source}), wider than the "
                    f"{self.share:.1%} asked")
        if self.nats > self.share * abs(self.ref_end):
            return f"the least margin {self.least:g}"
        return f"{self.share:.1%} of the reference's final loss; noise floor {self.noise.floor:.2g} ({self.noise.source})"

    @classmethod
    def of(cls, share: float, ref_end: float, noise: Noise, least: float = MIN_MARGIN) -> "Margin":
        """The margin asked (``share`` of ``ref_end``), widened to NOISE_K x the reference's noise floor where needed."""
        return cls(max(share * abs(ref_end), NOISE_K * noise.floor, least), share, noise, ref_end, least)


def _units(floor: float | None) -> tuple[str, float]:
    """How a loss is stated and its least margin: in nats with :data:`MIN_MARGIN` where the task has a floor (a
    language model's loss), else in its own units with none (a regression loss, as distillation's MSE)."""
    return (" nats", MIN_MARGIN) if floor is not None else ("", 0.0)


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


def spike(case: np.ndarray, reference: np.ndarray, twins: np.ndarray, margin: float) -> tuple[int, float] | None:
    """The step where the case's loss jumped above the reference's in one step, and by how much the gap rose
    (nats); None where no step is a spike. A spike, after the first quarter: the gap rose by more than
    :data:`SPIKE_MARGINS` margins and :data:`SPIKE_MOVES` times its (and the twins') usual one-step move; the
    case's own loss rose by more than two margins and :data:`SPIKE_REFERENCE_RISES` times the reference's largest
    rise; and the gap landed more than two margins above its median. The largest such rise is the spike.

    A spike can decide a verdict that the run's final window alone does not explain, and one set off by a GPU's
    nondeterministic kernels need not come again in the next run of the same code (Llama d4096-l4's AO-FP8 case
    on 2026-12-08: +0.46 nats at step 25 one night, none the night before), so the verdict names it."""
    # The first quarter is left out: there the curves fall steeply and part by design (an uncalibrated delayed
    # recipe's first steps at scale 1), and its jumps say nothing of a run that would not repeat.
    first = max(1, len(case) // 4)
    gap = (case - reference)[first - 1:]
    rises = np.diff(gap)
    own = np.diff(case)[first - 1:]
    if rises.size < 2 or not np.all(np.isfinite(gap)):  # a non-finite curve is judged by other rules
        return None
    twin_moves = np.abs(np.diff(twins - reference, axis=1))[:, first - 1:] if len(twins) else np.zeros(0)
    twin_moves = twin_moves[np.isfinite(twin_moves)]
    usual = max(float(np.median(np.abs(rises))), float(np.median(twin_moves)) if twin_moves.size else 0.0)
    least = SPIKE_MARGINS * margin
    # The case's own loss jumps (a reference that falls is no spike of the case, and a bump the reference has
    # too, a step earlier or later, rises no further in the case than in it), and the gap lands above its usual
    # level (a case coming back from a dip below the reference rises, but to where it was).
    spiked = ((rises > max(least, SPIKE_MOVES * usual))
              & (own > max(least, SPIKE_REFERENCE_RISES * float(np.diff(reference)[first - 1:].max())))
              & (gap[1:] - float(np.median(gap)) > least))
    if not spiked.any():
        return None
    step = int(np.argmax(np.where(spiked, rises, -np.inf)))
    return first + step, float(rises[step])


def judge(losses: Sequence[float], reference: Sequence[float], replicas: Sequence[Sequence[float]],
          floor: float | None, reference_mode: str, twins: Sequence[Sequence[float]] = (),
          share: float = MARGIN_REL, unigram: float | None = None) -> Parity:
    """The equivalence verdict of one loss curve against the reference's (same seed), with its power stated.

    ``reference`` is the reference mode's curve at the case's seed; ``twins``
    its curves at the same seed from perturbed weights (the paired noise floor);
    ``replicas`` its curves at other seeds (used for the noise only without
    twins: unpaired); ``floor`` the task's entropy rate (None: no floor check,
    progress relative to the start); ``share`` the margin asked, as a share of
    the reference's final loss (the ``parity_margin`` setting); ``unigram`` the task's unigram
    entropy (None: not checked), which the reference must end below to be judged against.
    """
    # Each verdict is made from one object, so that it is stored with its keys in this order.
    # A twin or seed that recorded fewer steps than the case and its reference (a damaged record) is left out and
    # said: it must not shorten the window the case is judged over.
    n = min(len(losses), len(reference))
    twin_curves = [list(c) for c in twins if len(c) >= n]
    seed_curves = [list(reference), *(list(c) for c in replicas if len(c) >= n)]
    short = len(twins) + len(replicas) - len(twin_curves) - (len(seed_curves) - 1)
    out: dict[str, Any] = {"rule": "equivalence", "reference_mode": reference_mode,
                           "reference_rounds": len(seed_curves), "floor": floor}
    if twin_curves:
        out["reference_twins"] = len(twin_curves)
    if n < MIN_STEPS:
        return Parity.from_dict({**out, "verdict": "inconclusive",
                                 "reason": (f"run too short to judge: {len(losses)} losses recorded, its "
                                            f"{reference_mode} reference's {len(reference)}; {MIN_STEPS} needed")})
    case = np.asarray(losses[:n], dtype=float)
    seeds = np.asarray([c[:n] for c in seed_curves], dtype=float)
    pairs = np.asarray([c[:n] for c in twin_curves], dtype=float).reshape(len(twin_curves), n)
    if not np.all(np.isfinite(case)):
        return Parity.from_dict({**out, "verdict": "fail", "reason": "the loss is not finite"})
    win = _window(n)
    k = win.stop - win.start
    start = float(np.mean(seeds[:, 0]))
    ref_end = float(np.mean(seeds[0, win]))
    case_end = float(np.mean(case[win]))
    seed_sd = float(np.std(seeds[:, win].mean(axis=1), ddof=1)) if len(seeds) > 1 else None
    noise = noise_of(case[win], seeds[0, win], pairs[:, win], seeds[:, win] if not len(pairs) else seeds[:0, win])
    progress = start - ref_end
    nats, least = _units(floor)
    margin = Margin.of(share, ref_end, noise, least)
    gap = case_end - ref_end
    lo, hi = gap - Z * noise.nats, gap + Z * noise.nats
    out.update(final=case_end, reference_final=ref_end, abs_diff=gap,
               rel_diff=gap / abs(ref_end) if ref_end else None, direction="higher" if gap > 0 else "lower",
               tolerance=margin.nats, margin_nats=margin.nats, margin_rel=margin.rel, margin_share=share,
               margin_source=margin.source, noise_nats=noise.nats, noise_floor_nats=noise.floor,
               noise_paired=noise.paired,
               interval=[lo, hi], seed_sd=seed_sd, progress_nats=progress, final_window=[win.start, n - 1],
               band_rel=margin.rel)
    if floor is not None and start > floor:
        out["progress"] = (start - ref_end) / (start - floor)
    power = (f"margin ±{margin.nats:.3g}{nats} ({_share(margin.rel)} of the reference's final loss"
             + (f", widened by its noise floor: {NOISE_K:g}x {noise.floor:.2g}" if margin.widened else "") + ")")

    # Too early on the curve: a difference there says nothing about the model the run trains.
    way = f"{out['progress']:.0%} of the way from {start:.3g} to the floor {floor:.3g}" if "progress" in out else \
        f"from {start:.3g} to {ref_end:.3g}"
    if unigram is not None and ref_end >= unigram:
        return Parity.from_dict({**out, "verdict": "inconclusive",
                                 # The first clause is what a summary line shows (report.tables.short_reason).
                                 "reason": (f"too early, the reference above the unigram entropy: the {reference_mode} "
                                            "reference's loss "
                                            f"{ref_end:.4g} over steps {win.start}-{n - 1} is not yet below the "
                                            f"task's unigram entropy {unigram:.4g} (what a model that ignores the "
                                            "context reaches): it has learned the tokens' frequencies only, so a gap "
                                            "here says nothing of attention or the MLPs; train longer (settings "
                                            f"steps); it came {way}")})
    if progress <= NOISE_K * noise.floor or ("progress" in out and out["progress"] < MIN_PROGRESS):
        return Parity.from_dict({**out, "verdict": "inconclusive",
                                 "reason": (f"too early on the curve to judge: the {reference_mode} reference came "
                                            f"{way} (needs {MIN_PROGRESS:.0%}, and a fall beyond {NOISE_K:g}x its "
                                            f"noise floor {noise.floor:.2g}); train longer (settings steps)")})

    failures: list[str] = []
    notes: list[str] = [f"{short} twin(s) or seed(s) of the reference left out: shorter than the run's {n} steps"] \
        if short else []
    if floor is not None:
        slack = max(0.02, 3.0 * float(np.std(case[win], ddof=1)) / math.sqrt(k))
        if case_end < floor - slack:
            failures.append(f"loss {case_end:.4g} over steps {win.start}-{n - 1} is below the task's floor "
                            f"{floor:.4g} (its entropy rate) by {floor - case_end:.3g} nats: no model gets there "
                            "without seeing what it must predict (a leak)")
    interval = f"[{lo:+.3g}, {hi:+.3g}]"
    side = "higher" if gap > 0 else "lower"
    edge = False
    if abs(gap) - Z * noise.nats > margin.nats:
        failures.append(f"loss {side} than {reference_mode}'s by {abs(gap):.3g}{nats} over steps {win.start}-{n - 1} "
                        f"({case_end:.4g} vs {ref_end:.4g}; interval {interval}), beyond the {power}")
    elif abs(gap) + Z * noise.nats > margin.nats:
        edge = True

    # The trend over the second half, and excursions before the final window, from smoothed curves.
    width = max(1, n // 15)
    ref_s = smooth(seeds[0], width)
    diff = smooth(case, width) - ref_s
    half = np.arange(n // 2, n)
    if half.size >= 3:
        slope = float(np.polyfit(half, diff[half], 1)[0])
        change = slope * (half.size - 1)
        out["gap_trend_nats"] = change
        if abs(change) > margin.nats / 2 and np.sign(change) == np.sign(diff[-1]) and abs(diff[-1]) > margin.nats / 4:
            notes.append(f"the gap grew by {change:+.3g}{nats} over the second half")
    jump = spike(case, seeds[0], pairs, margin.nats)
    if jump is not None:
        out["spike_step"], out["spike_nats"] = jump
        notes.append(f"a loss spike at step {jump[0]}: the gap rose by {jump[1]:.3g}{nats} in one step")
    if len(pairs):
        spread_t = np.sqrt(np.mean((np.array([smooth(c, width) for c in pairs]) - ref_s) ** 2, axis=0))
    elif len(seeds) > 1:
        spread_t = np.std(np.array([smooth(c, width) for c in seeds]), axis=0, ddof=1)
    else:
        spread_t = np.zeros(n)
    margin_t = np.maximum.reduce([share * np.abs(ref_s), NOISE_K * spread_t, np.full(n, MIN_MARGIN)])
    early = np.abs(diff[: win.start]) > margin_t[: win.start]
    run, run_start = longest_run(early)
    if run >= max(2, math.ceil(EXCURSION_FRACTION * n)):
        peak = run_start + int(np.argmax(np.abs(diff[run_start:run_start + run])))
        out["excursion"] = {"start": run_start, "steps": run, "side": "above" if diff[peak] > 0 else "below",
                            "peak_step": peak}
        notes.append(f"an early excursion at steps {run_start}-{run_start + run - 1} ({diff[peak]:+.3g}{nats} at "
                     f"step {peak}) that rejoined" if not failures else
                     f"outside the margin earlier too, steps {run_start}-{run_start + run - 1}")
    out["notes"] = notes
    tail = ("; " + "; ".join(notes)) if notes else ""
    if failures:
        return Parity.from_dict({**out, "verdict": "fail", "reason": "; ".join(failures) + tail})
    if edge:
        return Parity.from_dict({**out, "verdict": "inconclusive",
                                 "reason": (f"on the edge of the margin: loss {side} than {reference_mode}'s by "
                                            f"{abs(gap):.3g}{nats} over steps {win.start}-{n - 1} (interval "
                                            f"{interval}), neither within nor beyond the {power}; the reference "
                                            f"came {way}{tail}")})
    return Parity.from_dict({**out, "verdict": "pass",
                             "reason": (f"loss within the {power} of {reference_mode}'s over steps {win.start}-"
                                        f"{n - 1} (gap {gap:+.3g}, interval {interval}; noise floor: {noise.source}); "
                                        f"the reference came {way}{tail}")})


def _share(rel: float | None) -> str:
    return "–" if rel is None else f"{rel:.1%}" if rel < 0.095 else f"{rel:.0%}"


def judge_validation(value: float | None, reference: float | None, replicas: Sequence[float],
                     floor: float | None, margin: float, metric: str, twins: Sequence[float] = ()) -> ValidationVerdict:
    """A held-out loss against the reference's: within the curve's margin, or its twins' (else seeds') noise if wider."""
    # Each verdict is made from one object, so that it is stored with its keys in this order.
    if value is None or reference is None:
        return ValidationVerdict.from_dict({"verdict": "n/a", "reason": "no held-out value recorded", "metric": metric})
    out: dict[str, Any] = {"metric": metric, "value": float(value), "reference": float(reference)}
    if not math.isfinite(value):
        return ValidationVerdict.from_dict({**out, "verdict": "fail", "reason": f"{metric} is {value}"})
    if twins:
        sd = float(np.sqrt(np.mean((np.asarray(twins, dtype=float) - reference) ** 2)))
    else:
        values = [reference, *replicas]
        sd = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    nats, least = _units(floor)
    tol = max(margin, NOISE_K * sd, least)
    out["tolerance"] = tol
    if floor is not None and value < floor - 0.02:
        return ValidationVerdict.from_dict({**out, "verdict": "fail", "reason": f"held-out {metric} {value:.4g} is "
                                                                                f"below the task's floor {floor:.4g}: "
                                                                                "a leak"})
    ok = abs(value - reference) <= tol
    return ValidationVerdict.from_dict({**out, "verdict": "pass" if ok else "fail",
                                        "reason": f"held-out {metric} {value:.4g} vs {reference:.4g} (margin "
                                                  f"±{tol:.3g}{nats})"})
