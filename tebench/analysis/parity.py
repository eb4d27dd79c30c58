"""Convergence verdicts: is a case still training the same model as the reference?

Every mode of a workload starts from the same weights and sees the same
batches, so its loss curve should follow the reference mode's (PT-FP32 where it
ran, else PT-AMP). Each judged case gets one verdict with a reason:

``pass``
    the whole curve stays inside the reference's band and validation agrees;
``fail``
    the curve leaves the band for a sustained stretch (above *or* below: a case
    that learns much faster than its reference is training something else), or
    ends outside it, or its validation metric disagrees with the reference's;
``inconclusive``
    nothing can be judged: the reference did not learn (its loss did not fall
    clearly below where it started), the run is too short, or the band is too
    wide to mean anything. Never counted as a pass.

The band is built from noise that is really present, in log-loss space (losses
span orders of magnitude; a ratio is what stays comparable):

* how far PT-AMP strays from PT-FP32 on the same weights and batches (the
  cost of bf16 compute; not used when judging PT-AMP itself);
* the spread of the reference's rounds, when the run has several;
* the step-to-step jitter of the case against the reference (their paired
  difference, in which the shared batches cancel), after smoothing;
* a floor of ``parity_rtol``.

Each noise source is multiplied by :data:`NOISE_K`, and the reference curve is
widened by a few steps either way (:data:`SHIFT_FRACTION`), because where the
loss drops steeply, a small shift in *when* it drops is not a different model.
Losses below ``parity_atol`` count as equal, but that floor is never allowed
above a tenth of the reference's final loss: a fixed absolute tolerance larger
than the converged loss would pass anything once losses approach zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from tebench.analysis import equivalence
from tebench.analysis.equivalence import longest_run as _longest_run, smooth
from tebench.plan.modes import MODES, REFERENCE_MODES
from tebench.plan.recipes import RECIPES
from tebench.schema.records import CaseResult, Parity, Validation, ValidationVerdict
from tebench.schema.vocabulary import JUDGED, PARITY_VERDICTS
from tebench.workloads import SPECS
from tebench.workloads.zipf_markov import Floor, progress as zipf_progress

PARITY_RULES = "parity-2"
"""The name of the rules this tebench judges parity by, stored with every verdict judged over a whole run
(``Parity.rules``): the band rule here, the equivalence rule of :mod:`tebench.analysis.equivalence`, the
checks folded into both, and all their constants. A reader takes a stored verdict of these rules as it is
and judges again one of other rules or of none (records from before the field). Bump the number whenever
any of them changes so that a stored verdict could come out otherwise: the stored verdicts then count as
another rules' and are judged again on reading."""

# A loss that ends this many times above where it started has diverged.
DIVERGED_FACTOR = 1.5
NOISE_K = 3.0
"""Band half-width in multiples of each measured noise source."""
SHIFT_FRACTION = 0.04
"""The reference curve is widened by this fraction of the run's steps either way."""
EXCURSION_FRACTION = 0.04
"""A curve fails when it stays outside the band for this fraction of its steps (at least 2) in a row."""
MIN_STEPS = 8
"""Fewer recorded losses than this cannot be judged."""
MIN_LEARNING = 0.10
"""The reference must end at least this fraction below its initial loss to count as having learned."""
MAX_BAND = math.log(2.0)
"""A band wider than a factor of 2 at the end of the run cannot tell anything apart."""
FLOOR_FRACTION = 0.10
"""The loss floor never exceeds this fraction of the reference's final loss."""
MIN_ACCURACY = 0.5
"""A reference whose validation accuracy is below this has not learned the task: nothing to compare."""
ACCURACY_ATOL = 0.05
"""Smallest tolerance on a validation accuracy."""
BAND_POINTS = 200
"""Points kept of the band stored with each verdict (for charts)."""


def final_window(losses: Sequence[float]) -> list[float]:
    """The last 10% of the steps (at least 3): the final loss is their mean."""
    k = max(3, len(losses) // 10)
    return list(losses[-k:])


def final_loss(losses: Sequence[float]) -> float | None:
    """Mean of :func:`final_window`, or None for an empty curve."""
    window = final_window(losses)
    return float(np.mean(window)) if window else None


def divergence(losses: Sequence[float]) -> str | None:
    """Why a loss curve counts as diverged, or None when it does not."""
    for step, value in enumerate(losses):
        if not math.isfinite(value):
            return f"loss became {value} at step {step}"
    if len(losses) >= 6:
        first, last = float(np.mean(losses[:3])), final_loss(losses)
        if last is not None and last > DIVERGED_FACTOR * first:
            return f"loss rose from {first:.4g} (first steps) to {last:.4g} (final window)"
    return None


def _window(a: np.ndarray, half: int, fn: Any) -> np.ndarray:
    if half < 1:
        return a
    padded = np.pad(a, (half, half), mode="edge")
    return fn(np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1), axis=1)


@dataclass(frozen=True)
class Geometry:
    """How a run of ``n`` steps is smoothed and judged."""

    n: int
    width: int
    """Moving-average width."""
    shift: int
    """Steps the reference is widened by, either way."""
    excursion: int
    """Consecutive steps outside the band that make a failure."""

    @classmethod
    def for_steps(cls, n: int) -> "Geometry":
        return cls(n, max(1, n // 15), max(1, round(SHIFT_FRACTION * n)),
                   max(2, math.ceil(EXCURSION_FRACTION * n)))


def write_log(values: Sequence[float], floor: float, width: int) -> np.ndarray:
    return np.log(np.maximum(smooth(values, width), floor))


def reference_learned(curves: Sequence[Sequence[float]]) -> tuple[bool, str]:
    """Did the reference learn: does its loss end clearly below where it started?

    The start is the loss of the initial weights (step 0, the same in every
    mode); "clearly" means by :data:`MIN_LEARNING` of it and by more than three
    times the step-to-step noise of its final window.
    """
    start = float(np.mean([c[0] for c in curves]))
    final = float(np.mean([final_loss(c) for c in curves]))
    window = np.concatenate([final_window(c) for c in curves])
    noise = float(np.std(window, ddof=1)) if window.size > 1 else 0.0
    drop = start - final
    if drop < MIN_LEARNING * abs(start) or drop <= 3.0 * noise:
        return False, (f"reference did not learn: loss {start:.4g} at the start, {final:.4g} at the end "
                       f"(needs a fall of at least {MIN_LEARNING:.0%} and beyond 3x its noise {noise:.3g}); "
                       "train longer or warm the lr up (settings steps, lr_warmup)")
    return True, f"reference learned: {start:.4g} -> {final:.4g}"


@dataclass
class Noise:
    """Measured noise around the reference curve, per step, in log-loss units."""

    sources: dict[str, np.ndarray]

    def band(self, geo: Geometry, rtol: float) -> np.ndarray:
        """Half-width of the band at every step."""
        tau = np.full(geo.n, math.log1p(rtol))
        for values in self.sources.values():
            tau = np.maximum(tau, NOISE_K * _window(values[: geo.n], geo.shift, np.max))
        return tau

    def describe(self, geo: Geometry) -> dict[str, float]:
        """Each source's largest value (log units), for the record."""
        return {name: float(np.max(v[: geo.n])) for name, v in self.sources.items()}


def _raw_log(values: Sequence[float], floor: float, n: int) -> np.ndarray:
    return np.log(np.maximum(np.asarray(values[:n], dtype=float), floor))


def measure_noise(losses: Sequence[float], ref_curves: Sequence[Sequence[float]],
                  companions: Sequence[Sequence[float]], geo: Geometry, floor: float,
                  cache: dict | None = None, key: tuple = ()) -> tuple[np.ndarray, Noise]:
    """The reference's centre curve (smoothed log loss) and the noise sources around it.

    Sources: the spread of the reference's rounds; PT-AMP against PT-FP32; and
    the step-to-step jitter of the *paired* difference between case and
    reference. Every mode sees the same batches, so a hard batch spikes both
    curves at once and cancels in that difference; what is left is how much two
    runs jitter against each other, which the smoothed comparison must allow
    for. A systematic difference (a wrong model) is not jitter and stays outside.
    """
    n = geo.n

    def reference_part() -> tuple[np.ndarray, dict[str, np.ndarray]]:
        logs = np.array([write_log(c[:n], floor, geo.width) for c in ref_curves])
        center = logs.mean(axis=0)
        sources: dict[str, np.ndarray] = {}
        if len(ref_curves) > 1:
            sources["reference rounds"] = logs.std(axis=0, ddof=1)
        if companions:
            other = np.mean([write_log(c[:n], floor, geo.width) for c in companions], axis=0)
            sources["PT-AMP vs PT-FP32"] = np.abs(other - center)
        return center, sources

    # The companions passed are those long enough for n: n is part of the key.
    center, shared = _memo(cache, ("noise", key, n, floor, geo.width), reference_part)
    sources = dict(shared)
    if geo.width > 1:
        ref_raw = _memo(cache, ("raw", key[:1], n, floor),
                        lambda: np.mean([_raw_log(r, floor, n) for r in ref_curves], axis=0))
        paired = _raw_log(losses, floor, n) - ref_raw
        jitter = (paired - smooth(paired, geo.width))[n // 2:]
        if jitter.size > 1:
            sources["paired step-to-step noise"] = np.full(n, float(np.std(jitter, ddof=1)) / math.sqrt(geo.width))
    return center, Noise(sources)


def _factor(log_diff: float) -> str:
    return f"{math.exp(abs(log_diff)):.2f}x {'above' if log_diff > 0 else 'below'}"


def _downsample(*arrays: np.ndarray) -> list[list[float]]:
    n = len(arrays[0])
    idx = np.unique(np.linspace(0, n - 1, min(n, BAND_POINTS)).round().astype(int))
    return [idx.tolist()] + [[float(v) for v in a[idx]] for a in arrays]


def _memo(cache: dict | None, key: tuple, compute: Any) -> Any:
    # What depends on the reference alone is the same for every case judged against it: with
    # hundreds of rounds, recomputing it per case made judging quadratic in the rounds.
    if cache is None:
        return compute()
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def evaluate(losses: Sequence[float], ref_curves: Sequence[Sequence[float]], reference_mode: str,
             rtol: float, atol: float, companions: Sequence[Sequence[float]] = (),
             cache: dict | None = None) -> Parity:
    """Judge one loss curve against the reference's curves (its rounds).

    ``companions`` are PT-AMP curves when the reference is PT-FP32: their
    distance from it is noise a correct bf16 mode shows too. ``cache``: a dict
    kept across the cases of one judging pass (the curves must stay alive and
    unchanged meanwhile), in which reference-only values are computed once.
    """
    ref_id = tuple(map(id, ref_curves))
    refs = _memo(cache, ("refs", ref_id),
                 lambda: [list(r) for r in ref_curves if r and all(math.isfinite(v) for v in r)])
    out: dict[str, Any] = {"reference_mode": reference_mode, "reference_rounds": len(refs),
                           "rtol": rtol, "atol": atol}
    # Each verdict is made from one object, so that it is stored with its keys in this order.
    if not refs or not losses:
        return Parity.from_dict({**out, "verdict": "n/a", "reason": "no finite reference loss curve"})
    case_final = final_loss(losses)
    ref_final = _memo(cache, ("final", ref_id), lambda: float(np.mean([final_loss(r) for r in refs])))
    out.update(final=case_final, reference_final=ref_final)
    if case_final is None or not all(math.isfinite(v) for v in losses):
        return Parity.from_dict({**out, "verdict": "fail", "reason": "the loss is not finite"})
    n = min(len(losses), *(len(r) for r in refs))
    if n < MIN_STEPS:
        return Parity.from_dict({**out, "verdict": "inconclusive",
                                 "reason": f"run too short to judge: {n} losses recorded, {MIN_STEPS} needed"})
    learned, learn_reason = _memo(cache, ("learned", ref_id, n), lambda: reference_learned([r[:n] for r in refs]))
    if not learned:
        return Parity.from_dict({**out, "verdict": "inconclusive", "reason": learn_reason})

    geo = Geometry.for_steps(n)
    floor = max(1e-12, min(atol, FLOOR_FRACTION * ref_final))
    center, noise = measure_noise(losses, refs, [c for c in companions if len(c) >= n], geo, floor,
                                  cache=cache, key=(ref_id, tuple(map(id, companions))))
    tau = noise.band(geo, rtol)
    hi = _window(center, geo.shift, np.max) + tau
    lo = _window(center, geo.shift, np.min) - tau
    curve = write_log(losses[:n], floor, geo.width)
    outside = np.where(curve > hi, curve - hi, np.where(curve < lo, curve - lo, 0.0))
    run, run_start = _longest_run(outside != 0)
    worst = int(np.argmax(np.abs(curve - center)))
    k = len(final_window(range(n)))
    final_dev = float(np.mean(curve[-k:]) - np.mean(center[-k:]))
    final_tau = float(np.mean(tau[-k:]))

    diff = case_final - ref_final
    out.update(
        abs_diff=diff,
        rel_diff=diff / abs(ref_final) if ref_final else None,
        direction="higher" if diff > 0 else "lower",
        tolerance=abs(ref_final) * math.expm1(final_tau),
        band_rel=math.expm1(final_tau),
        floor=floor,
        max_curve_rel_dev=float(math.expm1(abs(curve[worst] - center[worst]))),
        max_curve_dev_step=worst,
        noise=noise.describe(geo),
        reference_noise=float(np.max(tau)),
        smoothing=geo.width, shift=geo.shift, excursion_steps=geo.excursion,
        reference_learned=learn_reason,
    )
    steps, c_lo, c_hi, c_mid = _downsample(np.exp(lo), np.exp(hi), np.exp(center))
    out["band"] = {"step": steps, "lo": c_lo, "hi": c_hi, "center": c_mid}
    if final_tau > MAX_BAND:
        return Parity.from_dict({**out, "verdict": "inconclusive",
                                 "reason": (f"the band is ±{math.expm1(final_tau):.0%} at the end (noise measured: "
                                            + ", ".join(f"{k} {v:.2f}" for k, v in out["noise"].items())
                                            + "): too wide to judge")})

    failures = []
    if run >= geo.excursion:
        seg = outside[run_start:run_start + run]
        side = "above" if seg.mean() > 0 else "below"
        peak = run_start + int(np.argmax(np.abs(seg)))
        failures.append(
            f"loss curve {side} the {reference_mode} band for {run} steps in a row (steps {run_start}-"
            f"{run_start + run - 1}; {_factor(curve[peak] - center[peak])} the reference at step {peak}, "
            f"band ±{math.expm1(tau[peak]):.0%})")
        out["excursion"] = {"start": run_start, "steps": run, "side": side, "peak_step": peak}
    if abs(final_dev) > final_tau:
        failures.append(f"final loss {case_final:.4g} vs {reference_mode} {ref_final:.4g}: "
                        f"{out['direction']} by {abs(diff):.3g}, beyond the band ±{math.expm1(final_tau):.0%}")
    if failures:
        return Parity.from_dict({**out, "verdict": "fail", "reason": "; ".join(failures)})
    return Parity.from_dict({**out, "verdict": "pass",
                             "reason": (f"loss curve inside the {reference_mode} band throughout; final "
                                        f"{case_final:.4g} vs {ref_final:.4g} (band ±{math.expm1(final_tau):.0%})")})


def _stored_metric(validation: Validation | None, metric: str) -> Any:
    """What ``validation`` holds under the key ``metric``: a declared field, or a workload's own key (in
    ``extra``); None where it holds nothing under it."""
    if validation is None:
        return None
    return validation.extra[metric] if metric in validation.extra else getattr(validation, metric, None)


def judge_validation(value_rec: Validation | None, refs: Sequence[Validation | None],
                     companions: Sequence[Validation | None], band_rel: float | None) -> ValidationVerdict:
    """Compare a case's validation metric with the reference's.

    Accuracies (GPT greedy generation) get a binomial tolerance over the
    independent sequences, widened by PT-AMP's distance from PT-FP32; loss-like
    metrics (distillation held-out MSE) the loss band at the end of the run.
    """
    # Each verdict is made from one object, so that it is stored with its keys in this order.
    metric = value_rec.metric if value_rec is not None else None
    value = value_rec.value if value_rec is not None and metric else None
    if not metric or not isinstance(value, (int, float)):
        return ValidationVerdict.from_dict({"verdict": "n/a", "reason": "no validation recorded"})
    ref_values = [v for r in refs if isinstance(v := _stored_metric(r, metric), (int, float))]
    if not ref_values:
        return ValidationVerdict.from_dict({"verdict": "n/a", "metric": metric, "value": value,
                                            "reason": f"the reference recorded no {metric}"})
    ref = float(np.mean(ref_values))
    out: dict[str, Any] = {"metric": metric, "value": float(value), "reference": ref}
    if not math.isfinite(value):
        return ValidationVerdict.from_dict({**out, "verdict": "fail", "reason": f"{metric} is {value}"})
    assert value_rec is not None  # a metric was read from it
    kind = value_rec.kind or ("accuracy" if "accuracy" in metric else "loss")
    if kind == "accuracy":
        if ref < MIN_ACCURACY:
            return ValidationVerdict.from_dict({**out, "verdict": "inconclusive",
                                                "reason": f"the reference's {metric} is {ref:.2f}, under "
                                                          f"{MIN_ACCURACY}: too low to compare the two (the loss "
                                                          "curve alone decides)"})
        count = int(value_rec.count or 16)
        p = min(max((value + ref) / 2.0, 0.0), 1.0)
        tol = max(ACCURACY_ATOL, 3.0 * math.sqrt(p * (1.0 - p) / count))
        others = [v for c in companions if isinstance(v := _stored_metric(c, metric), (int, float))]
        if others:
            tol = max(tol, NOISE_K * abs(float(np.mean(others)) - ref))
        out["tolerance"] = tol
        ok = abs(value - ref) <= tol
        text = f"{metric} {value:.3f} vs {ref:.3f} (tolerance ±{tol:.3f})"
    else:
        rel = band_rel if band_rel is not None else 0.1
        out["tolerance"] = rel
        ok = value > 0 and ref > 0 and abs(math.log(value / ref)) <= math.log1p(rel)
        text = f"{metric} {value:.4g} vs {ref:.4g} (band ±{rel:.0%})"
    return ValidationVerdict.from_dict({**out, "verdict": "pass" if ok else "fail", "reason": text})


def _dims(record: CaseResult) -> dict[str, Any]:
    return record.case.dims


LATER_TRAINING_SETTINGS = ("lr_warmup", "adam_beta2", "grad_clip")
"""Settings that change the training and were added after the first records: absent, they read as their defaults."""


def _setup(record: CaseResult) -> tuple[Any, ...]:
    """What makes two runs the same training: workload, size, dimensions, seed, steps, the optimizer's settings."""
    s = record.settings
    return (record.workload, record.size, _dims(record), s.seed, s.steps + s.warmup, s.lr,
            *(getattr(s, k) for k in LATER_TRAINING_SETTINGS))


def _same_setup(record: CaseResult, other: CaseResult) -> bool:
    # Compared value by value with ==, as a tuple's == would take the same NaN object as equal to itself.
    return all(a == b for a, b in zip(_setup(other), _setup(record)))


def _hashable(value: Any) -> Any:
    """``value`` as a dict key: equal values (JSON objects and arrays included) give equal keys."""
    if isinstance(value, dict):
        return frozenset((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


def _setup_key(record: CaseResult) -> tuple[Any, ...]:
    """What :func:`_same_setup` compares, as one hashable key: equal whenever it is True."""
    return _hashable(_setup(record))


def _plain(record: CaseResult) -> bool:
    """ok, single-process, non-graphed, non-FP8, unmutated, with a loss curve: a run that may serve as a reference."""
    return (record.status == "ok" and record.loss is not None and not record.graphs
            and record.parallel == "single" and not record.fp8
            and not (record.setup is not None and record.setup.test_mutation))


class _Grouped(list):
    """Records whose plain runs are grouped once by mode and setup.

    Finding a case's reference by scanning every record made judging all of
    them quadratic (minutes for a merge of 10,000 records); one dict lookup per
    case keeps it linear.
    """

    def __init__(self, records: Sequence[CaseResult]):
        super().__init__(records)
        self._groups: dict[tuple[Any, ...], list[CaseResult]] = {}
        self._of: dict[tuple[str, str], list[CaseResult]] = {}
        for r in self:
            if _plain(r):
                self._groups.setdefault((r.mode, _setup_key(r)), []).append(r)

    def of(self, record: CaseResult, mode: str) -> list[CaseResult]:
        """The plain runs of ``mode`` with ``record``'s setup, in the records' order."""
        # The key only narrows the search: _same_setup still decides, so that values a key
        # cannot tell apart as == does (a NaN lr, a list against a tuple) are judged as before.
        # Cases whose compared values have the same repr get the same answer (repr tells a list from a
        # tuple and 1 from 1.0, which == does not): the filter runs once per setup, not once per round.
        exact = (mode, repr(_setup(record)))
        if exact not in self._of:
            group = self._groups.get((mode, _setup_key(record)), [])
            self._of[exact] = [r for r in group if _same_setup(record, r)]
        return list(self._of[exact])

    def reference(self, record: CaseResult) -> tuple[str | None, list[CaseResult]]:
        """The first of :data:`REFERENCE_MODES` with plain runs of ``record``'s setup, and those runs."""
        for mode in REFERENCE_MODES:
            runs = self.of(record, mode)
            if runs:
                return mode, runs
        return None, []


def _curve(record: CaseResult) -> list[float]:
    """The loss of every step of a record that has a loss curve (every record judging looks at)."""
    assert record.loss is not None, "only records with a loss curve are judged or serve as references"
    return record.loss.per_step


def reference_for(records: Sequence[CaseResult], record: CaseResult) -> tuple[str | None, list[list[float]]]:
    """The reference mode and its loss curves (all rounds) for ``record``'s workload and size.

    Only ``ok`` single-process, non-graphed, unmutated reference runs of the
    same seed, steps and dimensions qualify: anything else would not be the
    same training.
    """
    mode, runs = _Grouped(records).reference(record)
    return mode, [_curve(r) for r in runs]


def judgeable(record: CaseResult) -> bool:
    """Whether ``record`` gets a verdict: it has a loss curve and finished ok or diverged."""
    return record.loss is not None and record.status in ("ok", "diverged")


def current(record: CaseResult) -> bool:
    """Whether ``record``'s stored verdict was judged by this tebench's rules (:data:`PARITY_RULES`) and is one of
    its verdicts: a word outside them ("PASS", "", a hand edit) counts as neither pass nor fail, so it is judged again."""
    return (record.parity is not None and record.parity.rules == PARITY_RULES
            and record.parity.verdict in PARITY_VERDICTS)


def attach(records: Sequence[CaseResult], only: Sequence[CaseResult] | None = None) -> None:
    """Judge (again) every record of ``only`` (default: all of ``records``) that has a loss curve,
    against the references among ``records``; each verdict names :data:`PARITY_RULES`.

    Parity is recomputed from the stored curves, so a report or merge judges
    with all the references it has (a shard may have lacked one) and with this
    tebench's rules.
    """
    # Grouped once here; judge stays the one entry point (and the one a test may wrap).
    grouped = _Grouped(records)
    cache: dict = {}
    for record in records if only is None else only:
        if judgeable(record):
            verdict = judge(grouped, record, cache)
            # Stamped here, not in judge: the executor's judge sees only the records before it (a
            # reference's later rounds are missing), so only a judgement over the whole run is final.
            verdict.rules = PARITY_RULES
            record.parity = verdict


def judge(records: Sequence[CaseResult], record: CaseResult, cache: dict | None = None) -> Parity:
    """The verdict of one record against the best reference among ``records`` (``cache``: see :func:`evaluate`)."""
    if record.parallel != "single" and record.nproc > 1:
        # Each rank trains on its own batch: the global batch is nproc times the
        # reference's, so the curves legitimately differ. Data-parallel
        # correctness is checked by the replicas staying identical instead.
        # One process sees the reference's batches, so it is judged like it.
        return Parity.from_dict({"verdict": "n/a", "reason": "data-parallel case: global batch is nproc x the "
                                                             "single-device reference's; see the replica check "
                                                             "in the multi-GPU table"})
    grouped = records if isinstance(records, _Grouped) else _Grouped(records)
    ref_mode, ref_runs = grouped.reference(record)
    if ref_mode is None:
        return Parity.from_dict({"verdict": "n/a", "reason": f"no reference mode ({' or '.join(REFERENCE_MODES)}) "
                                                             "ran for this workload and size"})
    floor = task_floor(record)
    extra = ExtraRuns.of(ref_runs[0])
    # Twins measure the paired noise of any loss; seeds' unpaired spread is enough only against a known floor.
    if extra.twins or (floor is not None and extra):
        return _calibration_note(record, _structure_note(record, _judge_equivalence(record, ref_mode, ref_runs,
                                                                                    extra, floor), ref_runs[:1]))
    if ref_runs[0] is record:
        curves = [_curve(r) for r in ref_runs]
        learned = reference_learned(curves)[1] if min(map(len, curves)) >= MIN_STEPS else "too short to judge"
        return Parity.from_dict({"verdict": "reference",
                                 "reason": f"{ref_mode} is the reference of this workload and size; {learned}",
                                 "reference_mode": ref_mode, "final": final_loss(_curve(record))})
    others = [r for r in ref_runs if r is not record]
    # A reference's later rounds are judged against its other rounds (an A/A check).
    companions: list[CaseResult] = []
    companion = MODES[ref_mode].companion
    if companion is not None:
        runs = grouped.of(record, companion)
        companions = [] if any(r is record for r in runs) else runs
    settings = record.settings
    out = evaluate(_curve(record), [_curve(r) for r in others], ref_mode,
                   settings.parity_rtol, settings.parity_atol,
                   [_curve(c) for c in companions], cache=cache)
    if out.verdict in ("pass", "fail"):
        _fold_checks(out, _frozen_beyond_reference(record, others),
                     judge_validation(record.validation, [r.validation for r in others],
                                      [c.validation for c in companions], out.band_rel))
    return _calibration_note(record, _structure_note(record, out, others))


def _fail_first(out: Parity, why: str) -> None:
    """Make ``out`` a fail whose reason starts with ``why`` (any earlier failure follows it)."""
    out.reason = why + ("; " + (out.reason or "") if out.verdict == "fail" else "")
    out.verdict = "fail"


def _fold_checks(out: Parity, frozen: str | None, validation: ValidationVerdict | None) -> None:
    """Fold the frozen-parameter check and the validation verdict into a judged curve's verdict (either rule)."""
    if frozen:
        _fail_first(out, frozen)
    if validation is None:
        return
    out.validation = validation
    if validation.verdict == "fail":
        out.reason = (f"{out.reason}; " if out.verdict == "fail" else "") + f"validation: {validation.reason}"
        out.verdict = "fail"
    elif validation.verdict in ("pass", "inconclusive"):
        out.reason = f"{out.reason}; validation {validation.verdict}: {validation.reason}"


def _structure_note(record: CaseResult, out: Parity, refs: Sequence[CaseResult]) -> Parity:
    """A judged case whose predictions depend on what they must not see, or ignore the context the
    reference uses, fails, whatever its loss did."""
    if out.verdict not in JUDGED:
        return out
    val = record.validation
    why = [w for w in (structure_failure(val), context_failure(val, [r.validation for r in refs])) if w]
    if why:
        _fail_first(out, "; ".join(why))
    return out


def _calibration_note(record: CaseResult, out: Parity) -> Parity:
    """A failed uncalibrated delayed-scaling case's reason names the likely cause."""
    fp8 = record.fp8
    spec = RECIPES.get(fp8.recipe) if fp8 else None
    if (out.verdict == "fail" and fp8 is not None and spec is not None and "calibration_steps" in spec.options
            and not fp8.calibration_steps):
        # Measured on an H200 (README, "FP8 calibration"): the uncalibrated first
        # step is what moved these curves, not FP8 precision as such.
        out.reason = (f"{out.reason}; uncalibrated {spec.name} scaling: TE's first step quantizes with scale 1 "
                      "(compare the fp8.calibration_steps variant)")
    return out


STRUCTURE_KL = 0.001
"""Mean KL (nats) beyond which a model's predictions moved where they must not (causal_kl, batch_kl),
for checks run without FP8 (``structure_fp8`` off or none). A correct model then moves them by exactly
0: every unmutated case of the H200 nightly and mutation runs read 0.0 where no per-tensor FP8 scale
was involved. The mistakes moved them by 0.0107 (TE-BF16 without its causal mask, GPT tutorial size)
and 0.0011 (batch_kl under the swapped layout, which the context check catches by itself)."""
STRUCTURE_KL_WITH_FP8 = 0.01
"""The same bar for checks that ran with the case's FP8 (records from before ``structure_fp8``, or FP8
weights): a per-tensor scale taken from the whole batch moves the predictions by rounding, up to 0.003
nats on the H200 (Llama d4096, TE current scaling and torchao tensorwise)."""


def structure_failure(validation: Validation | None) -> str | None:
    """Why a model's predictions depend on what they must not see (the future, other sequences), or None."""
    if validation is None:
        return None
    out = []
    causal, batch = validation.causal_kl, validation.batch_kl
    bar = STRUCTURE_KL if validation.structure_fp8 in ("off", "none") else STRUCTURE_KL_WITH_FP8
    if isinstance(causal, (int, float)) and not causal <= bar:
        out.append(f"predictions at a sequence's first half moved (mean KL {causal:.3g} nats) when only its "
                   "second half changed: the model sees the future (no causal mask?)")
    if isinstance(batch, (int, float)) and not batch <= bar:
        out.append(f"a sequence's predictions moved (mean KL {batch:.3g} nats) when the other sequences of "
                   "its batch changed: attention runs across the batch (a [seq, batch] layout fed "
                   "batch-first?)")
    return "; ".join(out) or None


CONTEXT_MIN_KL = 0.005
"""The reference's ``context_kl`` (nats) below which it has not learned to use the previous token enough
for the context check to say anything, and the check is skipped. On the H200 the references read
0.0075-0.0091 at the GPT tutorial size and 0.062 at Llama d4096 (checked), 1e-5-8e-5 at GPT d2048 and
d4096 and 0.002 at Llama d2048 (skipped: there the unmutated cases read 0.02-2.96x the reference's,
noise around a context the models have not learned yet)."""
CONTEXT_SHARE = 0.25
"""The share of the reference's ``context_kl`` below which a case ignores the context. Where the check
applies, unmutated cases read 0.59-1.54x the reference's on the H200 (PT-AMP 1.00-1.01x on the CPU);
a model whose attention never mixes positions (swap-layout, PyTorch or TE) reads exactly 0."""


def context_failure(validation: Validation | None, refs: Sequence[Validation | None]) -> str | None:
    """Why a model's predictions ignore the previous tokens that the reference's use, or None.

    ``refs``: the validations of the reference runs it is judged against; the least of their
    ``context_kl`` is the bar, so one reference seed that learned faster cannot fail a case.
    """
    mine = validation.context_kl if validation is not None else None
    theirs = [t for v in refs if v is not None and isinstance(t := v.context_kl, (int, float)) and math.isfinite(t)]
    if not isinstance(mine, (int, float)) or not theirs or min(theirs) < CONTEXT_MIN_KL:
        return None
    bar = min(theirs)
    if mine >= CONTEXT_SHARE * bar:
        return None
    return (f"its predictions ignore the tokens before the current one (mean KL {mine:.3g} nats when they "
            f"changed, the reference's {bar:.3g}): attention does not mix a sequence's positions (a "
            "[seq, batch] layout fed batch-first?)")


def task_floor(record: CaseResult) -> Floor | None:
    """What ``record``'s task lets a model reach (the zipf-markov source's entropy rate, and its unigram
    entropy), or None where the task has no known floor."""
    spec = SPECS.get(record.workload)
    loss_floor = getattr(spec, "loss_floor", None)
    if spec is None or loss_floor is None:
        return None
    try:
        return loss_floor(spec.size_type(**_dims(record)))
    except (TypeError, ValueError):
        return None


def _finite_curves(curves: Sequence[Sequence[float]] | None) -> list[list[float]]:
    return [list(c) for c in curves or [] if c and all(math.isfinite(v) for v in c)]


@dataclass(frozen=True)
class ExtraRuns:
    """A reference's extra runs that the equivalence rule reads: twins (paired) and replicas (other seeds)."""

    twins: list[list[float]]
    seeds: list[list[float]]
    """Replica curves; [] with fewer than two (three seeds), too few for a spread."""

    def __bool__(self) -> bool:
        return bool(self.twins or self.seeds)

    @classmethod
    def of(cls, reference: CaseResult) -> "ExtraRuns":
        loss = reference.loss
        replicas = _finite_curves(loss.replicas if loss else None)
        return cls(_finite_curves(loss.twins if loss else None), replicas if len(replicas) >= 2 else [])


def _finite_values(values: Sequence[Any] | None) -> list[float]:
    return [float(x) for x in values or [] if isinstance(x, (int, float)) and math.isfinite(x)]


def _judge_equivalence(record: CaseResult, ref_mode: str, ref_runs: list[CaseResult],
                       extra: ExtraRuns, floor: Floor | None) -> Parity:
    """The verdict against a reference that trained twins, or seeds on a task with a known floor
    (:mod:`equivalence`)."""
    reference = ref_runs[0]
    rate = floor.entropy_rate if floor is not None else None
    ref_curve = _curve(reference)
    if reference is record:
        if not ref_curve:  # a damaged record: no loss at all
            return Parity.from_dict({"verdict": "reference", "rule": "equivalence", "reference_mode": ref_mode,
                                     "floor": rate, "reason": (f"{ref_mode} is the reference of this workload and "
                                                               "size; it recorded no loss, so its cases cannot be "
                                                               "judged")})
        start, end = ref_curve[0], final_loss(ref_curve)
        if end is None:
            where = f"from {start:.4g}"
        elif floor is None:
            where = f"from {start:.4g} to {end:.4g}"
        else:
            where = (f"{zipf_progress(start, end, floor.entropy_rate):.0%} of the way from {start:.4g} to the floor "
                     f"{floor.entropy_rate:.4g}")
            if end >= floor.unigram_entropy:
                where += (f", not yet below the unigram entropy {floor.unigram_entropy:.4g}: too early to judge its "
                          "cases")
        runs = ", ".join(filter(None, [f"{len(extra.twins)} twin(s) at its own seed" if extra.twins else "",
                                       f"{len(extra.seeds)} other seeds" if extra.seeds else ""]))
        return Parity.from_dict({"verdict": "reference", "rule": "equivalence", "reference_mode": ref_mode,
                                 "floor": rate, "final": end,
                                 "reason": (f"{ref_mode} is the reference of this workload and size, trained again "
                                            f"as {runs}; its loss came {where}")})
    out = equivalence.judge(_curve(record), ref_curve, extra.seeds, rate, ref_mode, twins=extra.twins,
                            share=record.settings.parity_margin,
                            unigram=floor.unigram_entropy if floor is not None else None)
    if out.verdict in ("pass", "fail"):
        val, ref_val = record.validation, reference.validation
        verdict = None
        # A loss that is not finite fails with no margin: there is nothing for the validation to compare against.
        if val is not None and ref_val is not None and val.metric and val.metric == ref_val.metric \
                and out.margin_nats is not None:
            verdict = equivalence.judge_validation(val.value, ref_val.value, _finite_values(ref_val.replicas),
                                                   rate, out.margin_nats, val.metric,
                                                   twins=_finite_values(ref_val.twins))
        _fold_checks(out, _frozen_beyond_reference(record, [r for r in ref_runs if r is not record]), verdict)
    return out


def _unchanged(record: CaseResult) -> int | None:
    """How many parameter tensors training left exactly unchanged (None where not checked)."""
    return record.updates.unchanged if record.updates is not None else None


def _frozen_beyond_reference(record: CaseResult, refs: Sequence[CaseResult]) -> str | None:
    """A reason when training left more parameter tensors unchanged than in the reference."""
    mine = _unchanged(record)
    theirs = [_unchanged(r) for r in refs]
    if mine is None or None in theirs or not theirs:
        return None
    most = max(t for t in theirs if t is not None)
    if mine <= most:
        return None
    assert record.updates is not None  # mine was read from it
    names = ", ".join((record.updates.unchanged_names or [])[:5])
    return (f"{mine} parameter tensors never changed during training (the reference: {most}), "
            f"e.g. {names}")




SPEED_VERDICTS = ("reference", "pass")
"""The parity verdicts of a case that may back a speed claim (``n/a`` only where not judged by design)."""
NOT_FP8_PROOFS = ("partial", "no-fp8")
"""FP8 proofs that keep a case out of speed claims: its GEMMs did not (all) run in FP8."""


def counts_for_speed(record: Any) -> tuple[bool, str]:
    """Whether one case record may back a speed (or energy) claim, and why in words.

    The rule of ``tebench.report.tables.counts``, for one record (a dict as read, or a typed
    ``CaseResult``): status ``ok``; parity ``pass`` or ``reference``, or ``n/a`` for a data-parallel
    case, or no verdict at all for a case with no loss curve (a timing-only module benchmark);
    and an FP8 proof that is neither ``partial`` nor ``no-fp8``. Returns ``(True, "parity pass")``,
    ``(False, "parity fail")``, ``(False, "FP8 proof partial")``, … (reasons joined by ", ").
    """
    nproc: int | None
    if isinstance(record, CaseResult):
        status, verdict = record.status, record.verdict
        proof = record.fp8_proof.verdict if record.fp8_proof is not None else None
        parallel, nproc = record.parallel, record.nproc
    else:
        case = record.get("case") or {}
        status = record.get("status")
        verdict = (record.get("parity") or {}).get("verdict")
        proof = (record.get("fp8_proof") or {}).get("verdict")
        parallel, nproc = case.get("parallel", "single"), case.get("nproc")
    # The same test as judge() uses to leave a data-parallel case unjudged.
    data_parallel = parallel != "single" and (nproc or 1) > 1
    why: list[str] = []
    if status != "ok":
        why.append(f"status {status}")
    if verdict is None:
        if data_parallel:
            why.append("parity not judged")
    elif verdict == "n/a":
        if not data_parallel:
            why.append("parity n/a (nothing vouched for it)")
    elif verdict not in SPEED_VERDICTS:
        why.append(f"parity {verdict}")
    if proof in NOT_FP8_PROOFS:
        why.append(f"FP8 proof {proof}")
    if why:
        return False, ", ".join(why)
    if verdict is None:
        return True, "no parity verdict (timing only)"
    return True, "data-parallel (parity n/a by design)" if verdict == "n/a" else f"parity {verdict}"
