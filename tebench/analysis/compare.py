"""Compare two runs case by case: did anything get slower, heavier or less accurate beyond noise?

Cases are matched by case id and device model; a case whose settings differ
between the sides is reported as ``not-comparable``, not judged. The unit of
replication is the round (one process), not the step:

* time: each round is reduced to its median step time; the two sides' rounds
  are compared on a log scale with a t statistic (paired round by round when
  both sides come from one interleaved ``tebench ab`` run, Welch otherwise).
  A round's variance is never taken below what a moving-block bootstrap of its
  own (autocorrelated) steps gives. With fewer than ``min_rounds`` rounds a
  side's step time is ``inconclusive``. p-values are adjusted across cases
  (Holm by default); a regression needs an adjusted p below alpha *and* an
  interval that reaches beyond the threshold (a slowdown beyond noise is not let
  through unless it is shown to stay within the threshold); an improvement needs
  the change itself beyond it. ``slower``/``faster``: significant but within the
  threshold (counted and named, not failing the gate). ``unchanged`` means the
  whole interval lies within the threshold; everything in between is
  ``inconclusive`` (it fails the gate only with ``fail_on_inconclusive``).
* memory: the change must exceed the spread of the memory peaks across rounds;
* energy: joules per token (``1 / energy.tokens_per_j`` of each ok round), judged as memory is (beyond
  the ``energy`` threshold and the spread across rounds); no judgement where a side has no reading, and
  none from one reading a side (it moves from run to run: two nightlies of one commit differed by 5-9%);
* loss: the final loss must rise by more than the loss threshold, or parity
  must go from pass to fail or inconclusive (inconclusive never counts as pass).

Only a case that may back a speed claim in the report (:func:`parity.counts_for_speed`
on the head side: status ok, parity pass or reference, FP8 proof not partial or
no-fp8) is counted as ``improved`` or ``faster``; any other keeps its verdict,
flagged ``not counted: …`` with ``counted=False``. A slowdown is a slowdown: its
regressions fail the gate as before.

Flags make a time verdict advisory (shown, not failing the gate): a launch-bound
case (GPU busy < 50%; counted with ``gate_launch_bound``), a different physical
GPU (UUID), one side running cases concurrently (``--devices``) and the
other not, or a different enforced power limit or maximum SM clock (``energy.power_limit_w``,
``energy.max_sm_clock_mhz``; these count with ``count_env_changes``). The same flags make an
energy verdict advisory (energy per token is power times step time). A round that ran under
thermal or hardware slowdown is named in the flags; ``drop_throttled`` leaves such rounds out of
the time test. Runs from different environments (GPU model, driver, CUDA, torch,
TE) are flagged, and their differences are not counted as code regressions
unless the caller asks for it (``tebench ab`` does: there the environment is
what is being compared).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np


from tebench.analysis import judged_run
from tebench.gc_control import collector_off
from tebench.store import reader as results
from tebench.errors import EXIT_BAD_INPUT, TebenchError
from tebench.schema.version import SchemaError
from tebench.analysis import stats
from tebench.analysis.parity import counts_for_speed
from tebench.schema.records import CaseResult
from tebench.analysis.judged_run import CaseRounds

from tebench.analysis.defaults import CORRECTIONS, DEFAULT_ALPHA, DEFAULT_THRESHOLDS  # noqa: E402  (their home; re-exported)
ENV_KEYS = ("device", "driver", "cuda", "torch", "te")
"""Environment differences that make regressions not count (unless asked)."""
INFO_ENV_KEYS = ("python", "python_executable", "tebench_root", "git_commit")
"""Environment differences shown but not deciding whether regressions count."""
LAUNCH_BOUND_BUSY = 0.5
IGNORED_SETTINGS = ("timeout_s", "parity_rtol", "parity_atol", "parity_margin", "profile_steps", "validate",
                    "reference_seeds", "reference_twins",
                    "energy_sample_ms")
"""Case settings that do not change what is measured, so may differ between the sides."""
FAILING = ("regressed", "status-changed", "invalid")
VERDICTS = ("regressed", "status-changed", "invalid", "slower", "improved", "faster", "unchanged", "inconclusive",
            "not-measured", "not-comparable", "missing-in-head", "new-in-head")
UNMEASURED = ("not-measured", "not-comparable", "missing-in-head", "new-in-head")
"""Verdicts of cases that were not measured on both sides: no evidence either way."""
CLAIMS = ("improved", "faster")
"""Verdicts that claim a gain: counted only where the head side may back a speed claim."""


class CompareError(TebenchError, ValueError):
    """Inputs that cannot be compared (exit status 2)."""


@dataclass
class Options:
    """How cases are judged and what fails the gate."""

    thresholds: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    alpha: float = DEFAULT_ALPHA
    """Family-wise (holm) or false-discovery (bh) rate across the cases of one comparison."""
    correction: str = "holm"
    min_rounds: int = stats.MIN_ROUNDS
    min_steps: int = stats.MIN_STEPS
    gate_launch_bound: bool = False
    """Count time regressions of launch-bound cases (GPU busy < 50%) instead of showing them as advisory."""
    fail_on_missing: bool = False
    """A case in base but not in head fails the gate."""
    fail_on_inconclusive: bool = False
    """An inconclusive case fails the gate (a gate that must not pass blind)."""
    count_env_changes: bool = False
    """Count regressions despite a different environment, power limit or maximum SM clock."""
    drop_throttled: bool = False
    """Leave rounds that ran under thermal or hardware slowdown out of the time test."""

    def __post_init__(self) -> None:
        self.thresholds = {**DEFAULT_THRESHOLDS, **self.thresholds}
        for key, value in self.thresholds.items():
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise CompareError(f"threshold {key}={value!r}: must be a finite number >= 0")
        if not (0 < self.alpha < 1):
            raise CompareError(f"alpha {self.alpha!r}: must be between 0 and 1")
        if self.correction not in CORRECTIONS:
            raise CompareError(f"correction {self.correction!r}: known are {', '.join(CORRECTIONS)}")
        if self.min_rounds < 2 or self.min_steps < 2:
            raise CompareError("min_rounds and min_steps must be at least 2 (a spread needs two values)")


@dataclass
class Side:
    """One run's view of a case: its rounds' samples and summary values."""

    status: str
    reason: str | None
    rounds: list[list[float]]
    median_ms: float | None
    tokens_per_s: float | None
    memory: list[float]
    final_loss: float | None
    parity: str | None
    settings: dict[str, Any] = field(default_factory=dict)
    gpu_uuids: list[str] = field(default_factory=list)
    busy: float | None = None
    """Median fraction of the step the GPU was busy (None where not measured)."""
    concurrent: bool = False
    """The run executed several cases at once (``--devices`` with more than one GPU)."""
    speed_counts: bool = True
    """The case may back a speed claim (:func:`parity.counts_for_speed`; the report's rule)."""
    speed_reason: str | None = None
    """Why it may or may not, in words ("parity fail", "FP8 proof partial")."""
    energy: list[float] = field(default_factory=list)
    """Joules per token of each ok round with an energy reading (empty: no reading)."""
    power_limits: list[float] = field(default_factory=list)
    """The enforced power limits (W) its records were measured under."""
    max_sm_clocks: list[float] = field(default_factory=list)
    """The maximum SM clocks (MHz) its records were measured under."""
    throttled: dict[int, str] = field(default_factory=dict)
    """Index into ``rounds`` → "round 2 ran with thermal slowdown 35% of the time"."""
    mixed: str | None = None
    """A round whose case description differs from the last round's, and how: rounds that cannot be pooled."""
    spike: tuple[int, float] | None = None
    """The step and rise (nats) of a loss spike in the round whose verdict speaks (:func:`equivalence.spike`)."""


def side(records: list[CaseResult] | CaseRounds, concurrent: bool = False) -> Side:
    """Summarize the records (rounds) of one case in one run.

    The step time is the median of the rounds' medians (:attr:`judged_run.CaseRounds.level_ms`),
    the round being the unit of replication; tokens/s is taken at that step time.
    """
    rounds = records if isinstance(records, CaseRounds) else CaseRounds(records)
    records, last = rounds.records, rounds.records[-1]
    # The first round that did not finish ok names the status (a later ok round does not hide it).
    bad = next((r for r in records if r.status != "ok"), None)
    settings = _described(last)
    # Every round's description, not only the last one's: rounds of other settings pooled would be one number
    # of two benchmarks. The records of one description share one Case object, so this is mostly `is`.
    mixed = next((f"round {r.round_no} differs from round {last.round_no}: {'; '.join(diff)}" for r in records
                  if r.case is not last.case and r.case != last.case
                  and (diff := _settings_diff(_described(r), settings))), None)
    status = bad.status if bad else last.status
    # As the report: loss parity from the round whose verdict speaks for the case (the worst; a round that failed is
    # never hidden by a later pass), the status of the worst round.
    judged = rounds.judged
    speed_counts, speed_reason = counts_for_speed(judged)
    if speed_counts and status != "ok":
        speed_counts, speed_reason = False, f"status {status}"
    return Side(
        status=status,
        reason=bad.reason if bad else None,
        rounds=rounds.rounds_ms,
        median_ms=rounds.level_ms,
        tokens_per_s=rounds.tokens_per_s,
        memory=rounds.memory_peaks,
        final_loss=judged.final_loss,
        parity=judged.verdict,
        settings=settings,
        gpu_uuids=sorted({u for r in records if (u := r.device.uuid if r.device else None)}),
        busy=rounds.busy_fraction,
        concurrent=concurrent,
        speed_counts=speed_counts,
        speed_reason=speed_reason,
        energy=[1.0 / t for r in rounds.ok if r.energy and (t := r.energy.tokens_per_j) and math.isfinite(t)],
        power_limits=_energy_values(records, "power_limit_w"),
        max_sm_clocks=_energy_values(records, "max_sm_clock_mhz"),
        throttled={i: text for i, r in enumerate(rounds.ok) if (text := _throttle_text(r))},
        mixed=mixed,
        spike=_spike(judged),
    )


def _described(record: CaseResult) -> dict[str, Any]:
    """What a record says it ran, to be compared: its case description, settings without those that change no
    measurement (:data:`IGNORED_SETTINGS`)."""
    case = {k: v for k, v in record.case.to_dict().items() if k != "settings"}
    if not case:
        return {}
    return {**case, "settings": {k: v for k, v in record.settings.as_dict().items() if k not in IGNORED_SETTINGS}}


def _energy_values(records: Iterable[CaseResult], name: str) -> list[float]:
    """The distinct values of one ``energy`` field over the records that carry it."""
    return sorted({v for r in records if r.energy is not None and (v := getattr(r.energy, name)) is not None})


THROTTLE_REASONS = {"thermal": "thermal slowdown", "hw_slowdown": "hardware slowdown"}


def _throttle_text(r: CaseResult) -> str | None:
    """"round 2 ran with thermal slowdown 35% of the time", or None for a round not slowed down."""
    share = (r.energy.reason_share if r.energy else None) or {}
    parts = [f"{text} {v:.0%}" for key, text in THROTTLE_REASONS.items() if (v := share.get(key) or 0) > 0]
    return f"round {r.round_no} ran with {' and '.join(parts)} of the time" if parts else None


def _limit_text(name: str, base: list[float], head: list[float]) -> str | None:
    """"power limit 700 W → 500 W: speed and energy at different power limits are not like for like",
    or None when the values agree or a side has none (no reading: nothing to compare)."""
    if not (base and head) or base == head:
        return None
    what, unit, plural = {"power_limit_w": ("power limit", "W", "power limits"),
                          "max_sm_clock_mhz": ("max SM clock", "MHz", "maximum SM clocks")}[name]

    def fmt(values: list[float]) -> str:
        return ", ".join(f"{v:g} {unit}" for v in values)

    return f"{what} {fmt(base)} → {fmt(head)}: speed and energy at different {plural} are not like for like"


def limit_differences(b: Side, h: Side) -> list[str]:
    """The power-limit and maximum-SM-clock differences between two sides, in words."""
    return [t for t in (_limit_text("power_limit_w", b.power_limits, h.power_limits),
                        _limit_text("max_sm_clock_mhz", b.max_sm_clocks, h.max_sm_clocks)) if t]


@dataclass
class Delta:
    """The comparison of one case between base and head."""

    case_id: str
    device: str
    verdict: str
    """regressed | status-changed | invalid | slower | improved | faster | unchanged | inconclusive |
    not-measured | not-comparable | missing-in-head | new-in-head"""
    why: list[str] = field(default_factory=list)
    counted: bool = True
    """Whether a failing verdict fails the gate (False: advisory, see ``flags``); for ``improved`` and
    ``faster``, whether the gain counts (False: the head side may not back a speed claim)."""
    flags: list[str] = field(default_factory=list)
    """What makes this case's step time advisory or worth a second look."""
    time_ratio: float | None = None
    time_ci: tuple[float, float] | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    rounds: tuple[int, int] | None = None
    paired: bool | None = None
    tokens_ratio: float | None = None
    memory_ratio: float | None = None
    energy_ratio: float | None = None
    """Head over base joules per token (None where a side has no energy reading)."""
    loss_change: float | None = None
    base: dict[str, Any] | None = None
    head: dict[str, Any] | None = None

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING

    @property
    def not_counted(self) -> bool:
        """An ``improved`` or ``faster`` verdict that does not count (see :data:`CLAIMS`)."""
        return self.verdict in CLAIMS and not self.counted


def tally(deltas: Iterable[Delta]) -> dict[str, int]:
    """Cases per verdict, an ``improved`` or ``faster`` that does not count left out."""
    out = dict.fromkeys(VERDICTS, 0)
    for d in deltas:
        if not d.not_counted:
            out[d.verdict] = out.get(d.verdict, 0) + 1
    return out


def verdict_text(d: Delta) -> str:
    """The verdict as a table shows it: "regressed (advisory)", "improved (not counted)"."""
    if d.counted:
        return d.verdict
    return d.verdict + (" (advisory)" if d.failing else " (not counted)" if d.not_counted else "")


def _not_counted_flag(reason: str | None) -> str:
    reason = reason or "not a passing case"
    if "parity fail" in reason:
        why = "the speed of a model that does not train the same is not a gain"
    elif "parity" in reason:
        why = "the speed of a model not shown to train the same is not a gain"
    elif "FP8 proof" in reason:
        why = "an FP8 speed must come from GEMMs that ran in FP8"
    else:
        why = "only a passing case backs a speed claim"
    return f"not counted: {reason} ({why})"


def settings_differ(b: Side, h: Side) -> list[str]:
    """How the case settings of two sides differ, one ``key base → head`` per setting ([]: they measure the same
    benchmark)."""
    return _settings_diff(b.settings, h.settings) if (b.settings and h.settings) else []


def _settings_diff(b: dict[str, Any], h: dict[str, Any]) -> list[str]:
    def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, dict):
                out.update(flat(v, f"{prefix}{k}."))
            else:
                out[f"{prefix}{k}"] = v
        return out

    fb, fh = flat(b), flat(h)  # every setting on both sides: a reader completes them (store/reader)
    return [f"{k} {fb.get(k)!r} → {fh.get(k)!r}" for k in sorted(set(fb) | set(fh)) if fb.get(k) != fh.get(k)]


def time_test(b: Side, h: Side, opts: Options, paired: bool = False) -> stats.TimeTest | None:
    """The step-time test of one case, or None when a side has no timed round."""
    brounds, hrounds = _timed_rounds(b, h, opts, paired)
    if not (brounds and hrounds):
        return None
    return stats.compare_rounds(brounds, hrounds, paired=paired, confidence=1 - opts.alpha,
                                min_rounds=opts.min_rounds, min_steps=opts.min_steps)


def _dropped(b: Side, h: Side, opts: Options, paired: bool) -> tuple[set[int], set[int]]:
    """Indices of the rounds ``drop_throttled`` leaves out on each side; paired, a pair goes together."""
    if not opts.drop_throttled:
        return set(), set()
    if paired:
        both = set(b.throttled) | set(h.throttled)
        return both & set(range(len(b.rounds))), both & set(range(len(h.rounds)))
    return set(b.throttled), set(h.throttled)


def _timed_rounds(b: Side, h: Side, opts: Options, paired: bool) -> tuple[list[list[float]], list[list[float]]]:
    """The rounds that go into the time test (all of them unless ``drop_throttled``)."""
    db, dh = _dropped(b, h, opts, paired)
    return [r for i, r in enumerate(b.rounds) if i not in db], [r for i, r in enumerate(h.rounds) if i not in dh]


def _invalid(s: Side) -> str | None:
    if s.mixed:
        return f"its rounds ran different cases ({s.mixed}): they cannot be pooled"
    damaged = judged_run.damaged_steps(s.rounds)
    if damaged:
        return damaged
    if s.final_loss is not None and not math.isfinite(s.final_loss) and s.status == "ok":
        return f"final loss {s.final_loss!r} in a case recorded as ok"
    return None


def _summary(s: Side) -> dict[str, Any]:
    """``asdict(s)`` without its rounds and settings (and how its rounds differ): they are not shown, and rounds may hold a
    million steps that asdict would copy one by one."""
    return {f.name: copy.deepcopy(getattr(s, f.name)) for f in dataclasses.fields(s)
            if f.name not in ("rounds", "settings", "mixed")}  # mixed: said in the verdict's why


@dataclass
class _Findings:
    """What each metric of one case says, before they are weighed into one verdict."""

    regressed: list[tuple[str, str]] = field(default_factory=list)
    """(metric, text)"""
    improved: list[str] = field(default_factory=list)
    uncertain: list[str] = field(default_factory=list)
    small: list[tuple[str, str]] = field(default_factory=list)
    """("slower" | "faster", text): significant, within the threshold."""
    worse_untold: bool = False
    """A step time slower beyond the threshold that the rounds could not test: an improvement elsewhere does not
    outweigh it."""


def _damage(b: Side, h: Side) -> list[str]:
    """``base: why`` and ``head: why`` for each side whose measurements are damaged (:func:`_invalid`)."""
    return [f"{name}: {why}" for name, s in (("base", b), ("head", h)) if (why := _invalid(s))]


def judge(case_id: str, device: str, b: Side, h: Side, opts: Options | None = None,
          time: stats.TimeTest | None = None, p_adjusted: float | None = None,
          damage: list[str] | None = None) -> Delta:
    """Judge one case. ``time`` is its step-time test (computed here, unpaired, when not given);
    ``p_adjusted`` its p-value after correction across cases (the raw p-value when not given);
    ``damage``: :func:`_damage` of the sides when already found (found here when not given)."""
    opts = opts or Options()
    d = Delta(case_id, device, "unchanged", base=_summary(b), head=_summary(h))
    diff = _settings_diff(b.settings, h.settings) if (b.settings and h.settings) else []
    if diff:
        d.verdict = "not-comparable"
        d.why.append("case settings differ: " + "; ".join(diff))
        return d
    # Every step of every round is checked: found once per case when judge_cases gives it.
    bad = _damage(b, h) if damage is None else damage
    if bad:
        d.verdict = "invalid"
        d.why.extend(bad)
        return d
    found = _Findings()
    _judge_status(b, h, d, found)
    advisory = _advisory(b, h, opts, d)
    _throttle_flags(b, h, opts, d, paired=bool(time.paired) if time is not None else False)
    _judge_time(b, h, opts, d, found, time if time is not None else time_test(b, h, opts), p_adjusted)
    _judge_memory(b, h, opts, d, found)
    _judge_energy(b, h, opts, d, found)
    _judge_loss(b, h, opts, d, found)
    if b.status == h.status and b.status != "ok":
        d.why.append(f"{b.status} in both")
    _weigh(d, found, advisory)
    if d.verdict in CLAIMS and not h.speed_counts:
        # Shown, never claimed: the report takes only passing cases for speed, and so does the gate.
        d.counted = False
        d.flags.append(_not_counted_flag(h.speed_reason))
    if d.verdict == "unchanged" and b.status != "ok" and h.status != "ok":
        # Failed (or skipped) on both sides: nothing was measured, so nothing is "unchanged".
        d.verdict = "not-measured"
    return d


def _judge_status(b: Side, h: Side, d: Delta, found: _Findings) -> None:
    if b.status != h.status:
        worse = b.status == "ok" or (b.status == "skipped" and h.status not in ("ok", "skipped"))
        d.why.append(f"status {b.status} → {h.status}" + (f" ({h.reason})" if h.reason and worse else ""))
        if h.status == "ok" and b.status != "ok":
            found.improved.append("now ok")
        elif worse:
            found.regressed.append(("status", "status"))


def _advisory(b: Side, h: Side, opts: Options, d: Delta) -> list[str]:
    """Flags that make the time verdict advisory (also added to ``d.flags``)."""
    advisory: list[str] = []
    if b.gpu_uuids and h.gpu_uuids and b.gpu_uuids != h.gpu_uuids:
        advisory.append(f"different physical GPU ({', '.join(b.gpu_uuids)} → {', '.join(h.gpu_uuids)})")
    if b.concurrent != h.concurrent:
        which = "base" if b.concurrent else "head"
        advisory.append(f"only {which} ran cases concurrently (--devices): not like for like")
    elif b.concurrent:
        d.flags.append("both sides ran cases concurrently (--devices)")
    for text in limit_differences(b, h):
        if opts.count_env_changes:
            d.flags.append(text + ", counted (--count-env-changes)")
        else:
            advisory.append(text)
    busy = [x for x in (b.busy, h.busy) if x is not None]
    if busy and min(busy) < LAUNCH_BOUND_BUSY:
        text = f"launch-bound (GPU busy {min(busy):.0%} < {LAUNCH_BOUND_BUSY:.0%})"
        if opts.gate_launch_bound:
            d.flags.append(text + ", counted (--gate-launch-bound)")
        else:
            advisory.append(text)
    d.flags.extend(advisory)
    return advisory


def _judge_time(b: Side, h: Side, opts: Options, d: Delta, found: _Findings, time: stats.TimeTest | None,
                p_adjusted: float | None) -> None:
    thr = opts.thresholds
    if time is None:
        return
    d.time_ratio, d.rounds, d.paired, d.p_value = time.ratio, time.rounds, time.paired, time.p
    ci = (time.lo, time.hi) if time.lo is not None and time.hi is not None else None
    d.time_ci = ci
    p_value = d.p_adjusted = p_adjusted if p_adjusted is not None else time.p
    # A test with a p-value (time.enough) always has its interval: compare_rounds sets both or neither.
    if not time.enough or ci is None or p_value is None:
        found.uncertain.append(f"step time {time.ratio - 1:+.1%}: {time.note}" if math.isfinite(time.ratio)
                               else f"step time: {time.note}")
        found.worse_untold = math.isfinite(time.ratio) and time.ratio > 1 + thr["time"]
    else:
        lo, hi = ci
        change = (f"step time {time.ratio - 1:+.1%} ({1 - opts.alpha:.0%} CI {lo - 1:+.1%} … "
                  f"{hi - 1:+.1%}, adjusted p {p_value:.2g})")
        significant = p_value < opts.alpha
        if significant and time.ratio > 1 and hi > 1 + thr["time"]:
            # A slowdown beyond noise fails unless its interval shows it stays within the threshold.
            # Asking the point estimate to pass the threshold instead finds a true slowdown *at* the
            # threshold half the time, by construction (docs/design/verdicts.md#the-regression-rule).
            found.regressed.append(("time", change + ("" if time.ratio > 1 + thr["time"] else
                                                      f": beyond noise, and the interval reaches beyond the "
                                                      f"{thr['time']:.0%} threshold")))
        elif significant and time.ratio < 1 - thr["time"]:
            found.improved.append(change)
        elif significant and time.ratio != 1:
            # Real but small (asv#752's complaint: "~" hid it): named, not failing the gate.
            found.small.append(("slower" if time.ratio > 1 else "faster",
                                change + f": beyond noise, within the {thr['time']:.0%} threshold"))
        elif not (1 - thr["time"] <= lo and hi <= 1 + thr["time"]):
            found.uncertain.append(change + ": the interval reaches beyond the threshold")
            found.worse_untold = time.ratio > 1 + thr["time"]
    if b.tokens_per_s and h.tokens_per_s:
        ratio = h.tokens_per_s / b.tokens_per_s
        d.tokens_ratio = ratio if math.isfinite(ratio) and ratio > 0 else None  # beyond a float: not comparable


def _judge_level(metric: str, words: str, base: list[float], head: list[float], opts: Options,
                 found: _Findings, needs_spread: bool = False) -> float | None:
    """A per-round level (memory, energy per token): head over base medians, a change beyond the metric's
    threshold *and* the spread across rounds found as regressed or improved; None where a side has none.

    ``needs_spread``: a level that moves from run to run (energy per token: power times step time) is not
    judged from one reading a side, whose spread is unknown; a change beyond the threshold is then uncertain.
    """
    if not (base and head):
        return None
    bm, hm = float(np.median(base)), float(np.median(head))
    if not bm > 0:
        return None
    ratio = hm / bm
    if not (math.isfinite(ratio) and ratio > 0) and hm > 0:
        # Medians of such different sizes (a damaged 5e-324 on one side) have no ratio: not a verdict.
        found.uncertain.append(f"{words}: not comparable (base {bm:.3g}, head {hm:.3g}: their ratio is beyond a float)")
        return None
    spread = max(np.ptp(base) if len(base) > 1 else 0.0, np.ptp(head) if len(head) > 1 else 0.0)
    change = f"{words} {ratio - 1:+.1%}"
    beyond = abs(ratio - 1) > opts.thresholds[metric]
    if needs_spread and beyond and min(len(base), len(head)) < 2:
        found.uncertain.append(f"{change}: from {len(base)} and {len(head)} reading(s), too few to tell it from "
                               "the run-to-run spread (run with --rounds 3 or more)")
        return ratio
    if hm > bm * (1 + opts.thresholds[metric]) and hm - bm > spread:
        found.regressed.append((metric, change))
    elif hm < bm * (1 - opts.thresholds[metric]) and bm - hm > spread:
        found.improved.append(change)
    return ratio


def _judge_memory(b: Side, h: Side, opts: Options, d: Delta, found: _Findings) -> None:
    ratio = _judge_level("memory", "peak memory", b.memory, h.memory, opts, found)
    if ratio is not None:
        d.memory_ratio = ratio


def _throttle_flags(b: Side, h: Side, opts: Options, d: Delta, paired: bool) -> None:
    """Name the rounds that ran slowed down (thermal, hardware), and what ``drop_throttled`` left out."""
    for name, s in (("base", b), ("head", h)):
        d.flags.extend(f"{name}: {text}" for _, text in sorted(s.throttled.items()))
    db, dh = _dropped(b, h, opts, paired)
    if db or dh:
        d.flags.append(f"--drop-throttled: {len(db)} base and {len(dh)} head round(s) left out of the time test"
                       + (" (paired: a pair goes together)" if paired else ""))


def _judge_energy(b: Side, h: Side, opts: Options, d: Delta, found: _Findings) -> None:
    """Joules per token, as memory (no reading on a side: no judgement)."""
    ratio = _judge_level("energy", "energy per token", b.energy, h.energy, opts, found, needs_spread=True)
    if ratio is not None:
        d.energy_ratio = ratio


UNVOUCHED = "a fall no verdict vouches for"
"""How a case's why says its loss fell past the threshold where the head's parity did not pass (a leak, more often
than a gain)."""
UNVOUCHED_PASS = "the head's loss was not judged"
"""How a case's why says its base passed loss parity and its head was not judged (its reference did not run)."""


def unvouched_loss(d: Delta) -> bool:
    """Whether ``d`` is inconclusive (in part) because its head's loss has no verdict that vouches for it."""
    return any(UNVOUCHED in w or UNVOUCHED_PASS in w for w in d.why)


def _judge_loss(b: Side, h: Side, opts: Options, d: Delta, found: _Findings) -> None:
    if b.final_loss is not None and h.final_loss is not None and math.isfinite(b.final_loss):
        d.loss_change = h.final_loss - b.final_loss
        rel = d.loss_change / abs(b.final_loss) if b.final_loss else 0.0
        if not math.isfinite(h.final_loss) or rel > opts.thresholds["loss"]:
            found.regressed.append(("loss", f"final loss {b.final_loss:.4g} → {h.final_loss:.4g}"))
        elif rel < -opts.thresholds["loss"] and h.parity == "pass":
            found.improved.append(f"final loss {b.final_loss:.4g} → {h.final_loss:.4g}")
        elif rel < -opts.thresholds["loss"]:
            # A loss far below the last run's that no verdict of the head vouches for is more often a leak (the
            # model sees its targets) than a gain: tebench's own parity fails a loss too low. A reference's is not
            # vouched for either: its settings are the same on both sides, so a fall this large is another training.
            found.uncertain.append(f"final loss {b.final_loss:.4g} → {h.final_loss:.4g} ({rel:+.0%}) with head's loss "
                                   f"parity {h.parity or 'not judged'}: {UNVOUCHED}")
    # "inconclusive" is never a pass: losing a pass is a regression, gaining one from it is not an improvement.
    if b.parity == "pass" and h.parity in ("fail", "inconclusive"):
        spiked = (f" after a loss spike at step {h.spike[0]} (+{h.spike[1]:.3g} in one step; "
                  + (f"the base had one too, at step {b.spike[0]})" if b.spike else "the base had none)")) \
            if h.spike else ""
        found.regressed.append(("parity", f"loss parity pass → {h.parity}{spiked}"))
    elif b.parity in ("fail", "inconclusive") and h.parity == "pass":
        found.improved.append(f"loss parity {b.parity} → pass")
    elif b.parity == "pass" and h.parity != "pass":
        # The head ran without what judges it (its reference left out by --only, a shard; or it became the
        # reference itself): its pass is not kept.
        found.uncertain.append(f"loss parity pass → {h.parity or 'not judged'}: {UNVOUCHED_PASS}")


def _weigh(d: Delta, found: _Findings, advisory: list[str]) -> None:
    """One verdict from the metrics' findings: a regression outweighs an improvement, which outweighs a
    small change, which outweighs what could not be told; but an improvement beside a step time slower past the
    threshold that could not be told is inconclusive."""
    if found.regressed:
        d.verdict = "status-changed" if found.regressed[0][0] == "status" else "regressed"
        d.why = [text for _, text in found.regressed] + d.why
        # Advisory flags concern the step time, and the energy per token it is part of; any other
        # regression still counts.
        d.counted = not (advisory and all(metric in ("time", "energy") for metric, _ in found.regressed))
    elif found.improved and found.worse_untold:
        # Less memory does not make up for a step time 12x slower that one round a side cannot test: the case
        # is not called improved while its time may have regressed past the threshold.
        d.verdict = "inconclusive"
        d.why = found.uncertain + found.improved + d.why
    elif found.improved:
        d.verdict = "improved"
        d.why = found.improved + d.why
    elif found.small:
        d.verdict = found.small[0][0]
        d.why = [text for _, text in found.small] + d.why
    elif found.uncertain:
        d.verdict = "inconclusive"
        d.why = found.uncertain + d.why
    if d.verdict != "inconclusive" and found.uncertain:
        d.why += found.uncertain


def judge_cases(pairs: list[tuple[str, str, Side, Side]], opts: Options, paired: bool = False) -> list[Delta]:
    """Judge many cases together: step-time p-values are adjusted across them."""
    damage = [_damage(b, h) for _, _, b, h in pairs]
    tests = [None if damage[i] else time_test(p[2], p[3], opts, paired) for i, p in enumerate(pairs)]
    family = [(i, t.p) for i, t in enumerate(tests) if t is not None and t.p is not None]  # t.enough
    adjusted = dict(zip([i for i, _ in family], stats.adjust_pvalues([p for _, p in family], opts.correction)))
    return [judge(c, dev, b, h, opts, tests[i], adjusted.get(i), damage[i]) for i, (c, dev, b, h) in enumerate(pairs)]


def environment(run: results.Run) -> dict[str, Any]:
    """The parts of a run's environment that change performance."""
    header = run.header
    env = header.environment
    ab = header.ab
    return {
        "device": env.device_name,
        "driver": env.driver,
        "cuda": env.cuda,
        "torch": env.torch,
        "te": env.te,
        "python": env.python,
        "python_executable": ab.python if ab else None,
        "tebench_root": ab.tebench_root if ab else None,
        "git_commit": env.git_commit,
        # Detection records NVTE_*, TORCH_*, CUDA_* ...; a side of `tebench ab` adds what it set itself.
        "env_vars": {**env.env_vars, **((ab.env if ab else None) or {})},
    }


def env_differences(benv: dict[str, Any], henv: dict[str, Any]) -> list[str]:
    """Human-readable differences: the keys that change performance, then Python, then env variables."""
    out = [f"{k}: {benv.get(k)} → {henv.get(k)}" for k in ENV_KEYS + INFO_ENV_KEYS if benv.get(k) != henv.get(k)]
    bv, hv = benv.get("env_vars") or {}, henv.get("env_vars") or {}
    for k in sorted(set(bv) | set(hv)):
        if bv.get(k) != hv.get(k):
            out.append(f"${k}: {bv.get(k, '(unset)')} → {hv.get(k, '(unset)')}")
    return out


@dataclass
class Comparison:
    """Everything ``tebench compare`` (and ``tebench ab``) reports."""

    base: str
    head: str
    base_env: dict[str, Any]
    head_env: dict[str, Any]
    env_differs: list[str]
    """Keys of ENV_KEYS that differ (these decide ``counted``)."""
    counted: bool
    """Whether regressions count (False when environments differ and the caller did not ask)."""
    options: Options
    deltas: list[Delta]
    paired: bool = False
    """Both sides come from one interleaved ``tebench ab`` run: rounds are compared pair by pair."""
    env_details: list[str] = field(default_factory=list)
    """Every environment difference, env variables included."""
    skipped: list[str] = field(default_factory=list)
    """Lines of either results file that could not be used (e.g. a NaN step time), as file:line: why."""
    limit_details: list[str] = field(default_factory=list)
    """Power-limit and maximum-SM-clock differences between the runs, in words (from the case records'
    ``energy``): the cases they concern have advisory speed and energy verdicts unless ``count_env_changes``."""

    @property
    def thresholds(self) -> dict[str, float]:
        return self.options.thresholds

    @property
    def method(self) -> str:
        o = self.options
        return (f"time: rounds (one process each) are the unit; each round's median step time, on a log scale, "
                f"{'paired round by round (interleaved ABBA run), paired t' if self.paired else 'Welch t'}; a "
                f"round's variance is at least its moving-block bootstrap variance (autocorrelated steps); at "
                f"least {o.min_rounds} rounds of {o.min_steps}+ steps per side, else inconclusive; p-values "
                f"adjusted across cases ({o.correction}), alpha {o.alpha:g}; a regression needs an adjusted p "
                f"below alpha and a slowdown whose interval reaches beyond the threshold (slower: significant, the "
                f"whole interval within it); an improvement, a change beyond the threshold; unchanged means the {1 - o.alpha:.0%} interval "
                f"lies within the threshold. memory: change vs the spread across rounds. energy: joules per token, "
                f"change vs the spread across rounds (no judgement where a side has no reading). loss: final-loss "
                f"change and parity (inconclusive never counts as pass)."
                + (" Rounds that ran under thermal or hardware slowdown are left out of the time test "
                   "(--drop-throttled)." if o.drop_throttled else ""))

    def count(self, verdict: str) -> int:
        """Cases with this verdict; an ``improved`` or ``faster`` that does not count is left out."""
        return sum(d.verdict == verdict and not d.not_counted for d in self.deltas)

    @property
    def not_counted(self) -> list[Delta]:
        """``improved`` or ``faster`` cases whose head side may not back a speed claim."""
        return [d for d in self.deltas if d.not_counted]

    @property
    def regressions(self) -> list[Delta]:
        return [d for d in self.deltas if d.failing]

    @property
    def failures(self) -> list[Delta]:
        """What fails the gate: counted failing verdicts (and missing cases when asked)."""
        out = [d for d in self.deltas if d.failing and d.counted]
        if self.options.fail_on_missing:
            out += [d for d in self.deltas if d.verdict == "missing-in-head"]
        if self.options.fail_on_inconclusive:
            out += [d for d in self.deltas if d.verdict == "inconclusive"]
        return out

    @property
    def too_few_rounds(self) -> list[Delta]:
        return [d for d in self.deltas if d.rounds and d.p_value is None]

    @property
    def measured(self) -> int:
        """Cases measured on both sides; with none, the comparison says nothing."""
        return sum(d.verdict not in UNMEASURED for d in self.deltas)

    @property
    def exit_code(self) -> int:
        """1 on a counted failure; 2 when no case was measured on both sides (a gate must not pass on nothing),
        or when every failure is damage in the base run: bad input, not a regression of the head."""
        if self.failures and self.counted:
            return EXIT_BAD_INPUT if self.base_damaged else 1
        return 0 if self.measured else EXIT_BAD_INPUT

    @property
    def base_damaged(self) -> list[Delta]:
        """The failures, when each is an ``invalid`` verdict for the base's measurements alone (else [])."""
        only_base = all(d.verdict == "invalid" and d.why and all(w.startswith("base:") for w in d.why)
                        for d in self.failures)
        return self.failures if (self.failures and only_base) else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base, "head": self.head, "base_env": self.base_env, "head_env": self.head_env,
            "environment_differs": self.env_differs, "environment_differences": self.env_details,
            "limit_differences": self.limit_details,
            "regressions_counted": self.counted, "paired": self.paired,
            "thresholds": self.thresholds, "options": asdict(self.options), "method": self.method,
            "summary": {v: self.count(v) for v in VERDICTS},
            "failing": len(self.failures), "advisory": sum(d.failing and not d.counted for d in self.deltas),
            "not_counted": len(self.not_counted),
            "too_few_rounds": len(self.too_few_rounds), "skipped_lines": self.skipped,
            "exit_code": self.exit_code,
            "cases": [asdict(d) for d in self.deltas],
        }

    def to_json(self) -> str:
        # NaN is not JSON; a ratio that cannot be computed is written as null.
        return json.dumps(_finite(self.to_dict()), indent=2, default=str)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def ab_id(run: results.Run) -> str | None:
    """The id of the interleaved ``tebench ab`` run this side belongs to (None for a plain run)."""
    ab = run.header.ab
    return ab.id if ab else None


def compare_runs(base: results.Run, head: results.Run, opts: Options | None = None,
                 base_name: str = "base", head_name: str = "head") -> Comparison:
    """Compare two runs as :func:`judged_run.read` reads them (the last record of each case and round, parity
    judged)."""
    opts = opts or Options()
    bcases = judged_run.by_case(base.cases, base.header.peak_tflops, by_device=True)
    hcases = judged_run.by_case(head.cases, head.header.peak_tflops, by_device=True)
    if not set(bcases) & set(hcases):
        raise CompareError(f"{base_name} and {head_name} have no case in common (same case id on the same device)")
    paired = ab_id(base) is not None and ab_id(base) == ab_id(head)
    benv, henv = environment(base), environment(head)
    differs = [k for k in ENV_KEYS if benv.get(k) != henv.get(k)]
    pairs, deltas = [], {}
    bconc, hconc = base.concurrent, head.concurrent
    for key in sorted(set(bcases) | set(hcases)):
        case_id, device = key
        if key not in hcases:
            deltas[key] = Delta(case_id, device, "missing-in-head", ["in base only"])
        elif key not in bcases:
            deltas[key] = Delta(case_id, device, "new-in-head", ["in head only"])
        else:
            pairs.append((case_id, device, side(bcases[key], bconc), side(hcases[key], hconc)))
    for d in judge_cases(pairs, opts, paired):
        deltas[(d.case_id, d.device)] = d
    return Comparison(base_name, head_name, benv, henv, differs, opts.count_env_changes or not differs, opts,
                      [deltas[k] for k in sorted(deltas)], paired, env_differences(benv, henv),
                      list(base.problems) + list(head.problems),
                      limit_differences(_run_limits(base), _run_limits(head)))


def _spike(record: CaseResult) -> tuple[int, float] | None:
    p, steps = record.parity, len((record.loss.per_step if record.loss else None) or [])
    if p is None or p.spike_step is None or p.spike_nats is None:
        return None
    # A stored spike the curve cannot have (a hand edit: a step past its end, a rise that is no rise) names none.
    if not (0 < p.spike_step < steps and math.isfinite(p.spike_nats) and p.spike_nats > 0):
        return None
    return p.spike_step, float(p.spike_nats)


def _run_limits(run: results.Run) -> Side:
    """The power limits and maximum SM clocks over a run's records, as a :class:`Side` holds them."""
    return Side("ok", None, [], None, None, [], None, None,
                power_limits=_energy_values(run.cases, "power_limit_w"),
                max_sm_clocks=_energy_values(run.cases, "max_sm_clock_mhz"))


def compare(base_path: str | Path, head_path: str | Path, thresholds: dict[str, float] | None = None,
            count_env_changes: bool = False, opts: Options | None = None, rejudge: bool = False) -> Comparison:
    """Compare two results files or run directories (``rejudge``: judge every parity verdict again,
    :func:`judged_run.judge_parity`)."""
    if opts is None:
        opts = Options(thresholds=dict(thresholds or {}), count_env_changes=count_env_changes)
    # The records of both files stay to the end and hold no cycles: a collection would only walk them (a sixth
    # of compare's time on 2,000 records, docs/findings/speed.md).
    with collector_off():
        try:
            base, head = judged_run.read(base_path, rejudge=rejudge), judged_run.read(head_path, rejudge=rejudge)
        except (OSError, SchemaError) as exc:
            raise CompareError(str(exc)) from None
        return compare_runs(base, head, opts, str(base_path), str(head_path))
