"""A run read for reporting: typed records, the last of each (case, round), parity judged where it must be.

:class:`CaseRounds` holds every round of one case in one run, where the values
over rounds (pooled median, its interquartile interval, tokens/s, TFLOP/s, MFU,
memory peaks, the median of round medians) are computed, once; :func:`read`
turns a results file into the :class:`~tebench.store.reader.Run` that report, compare,
merge and history all use: the last record of each (case, round), parity judged.
"""

from __future__ import annotations

import functools
import math
import warnings
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from tebench.analysis import parity as parity_rules
from tebench.schema.environment import PeakRates
from tebench.schema.records import Case, CaseResult, Summary, Throughput
from tebench.store import reader as results

STATUS_SEVERITY = ("failed", "timeout", "oom", "diverged", "ok", "skipped")
"""Worst first: the status a case shows when its rounds disagree."""
VERDICT_SEVERITY = {"fail": 2, "inconclusive": 1}
"""The loss-parity verdicts that outrank a pass when a case's rounds disagree (higher: worse)."""


def speedup(reference_ms: Any, ms: Any) -> Any:
    """How many times faster than the reference: ``reference median / median`` (works on arrays too)."""
    return reference_ms / ms


def damaged_steps(rounds: Sequence[Sequence[Any]]) -> str | None:
    """Why these rounds' step times are no measurement ("round 1: step time 0.0 (non-finite or non-positive)"),
    or None. A step takes time: a zero, a negative or a NaN comes from a damaged or hand-edited file, and a
    report or comparison that used it would show a speedup of infinity."""
    for i, r in enumerate(rounds):
        a = np.asarray(r)  # one pass in numpy (rounds may hold a million steps); anything odd: the loop
        if a.dtype.kind in "biuf" and bool((np.isfinite(a) & (a > 0)).all()):
            continue
        bad = [v for v in r if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0)]
        if bad:
            return f"round {i}: step time {bad[0]!r} (non-finite or non-positive)"
    return None


class CaseRounds:
    """Every round of one case in one run (one device): the values a report or a comparison shows.

    Two medians, on purpose: :attr:`median_ms` pools the rounds' steps (the
    report's step time, and the one that is stored for a single round);
    :attr:`level_ms` is the median of the rounds' medians, the round-level
    value the regression tests work with (a round is one process, the unit
    of replication).
    """

    def __init__(self, records: Iterable[CaseResult], peak_tflops: PeakRates | None = None):
        self.records = sorted(records, key=lambda r: r.round_no)
        if not self.records:
            raise ValueError("CaseRounds needs at least one record")
        self.peak_tflops = peak_tflops
        self.ok = [r for r in self.records if r.timed]
        """The rounds that finished ok with a step time."""

    @property
    def case_id(self) -> str:
        return self.records[-1].case_id

    @property
    def damaged(self) -> str | None:
        """Why the ok rounds' step times are no measurement (:func:`damaged_steps`), or None."""
        return damaged_steps(self.rounds_ms)

    @property
    def case(self) -> Case:
        return self.records[-1].case

    @property
    def last(self) -> CaseResult:
        """The last ok round (the last round when none is ok): its memory, loss and parity are shown."""
        return (self.ok or self.records)[-1]

    @functools.cached_property
    def judged(self) -> CaseResult:
        """The ok round whose loss-parity verdict speaks for the case: the worst of the rounds' (fail, then
        inconclusive), the last round among equals, so that a round that failed is never hidden by a later one that
        passed (a fault in one round, a resumed run). Where every round has the same verdict, :attr:`last`."""
        rounds = self.ok or self.records
        return max(reversed(rounds), key=lambda r: VERDICT_SEVERITY.get(r.verdict or "", 0))

    @property
    def parity_note(self) -> str:
        """"round 0 of 3: " where the rounds' verdicts differ and :attr:`judged` speaks for them; "" else."""
        rounds = self.ok or self.records
        if len({r.verdict for r in rounds}) < 2:
            return ""
        judged = self.judged
        others = ", ".join(f"round {r.round_no} {r.verdict or 'unjudged'}" for r in rounds if r is not judged)
        return f"round {judged.round_no} ({others}): "

    @property
    def status(self) -> str:
        """The worst status of the rounds."""
        return min((r.status for r in self.records), key=STATUS_SEVERITY.index)

    @property
    def reason(self) -> str | None:
        status = self.status
        return next((r.reason for r in self.records if r.status == status and r.reason), None)

    @property
    def rounds_ms(self) -> list[list[float]]:
        """The per-step samples of each ok round."""
        return [r.samples_ms for r in self.ok]

    @property
    def samples_ms(self) -> list[float]:
        return [s for r in self.ok for s in r.samples_ms]

    @functools.cached_property
    def summary(self) -> Summary:
        """``Summary.of`` the pooled steps: the median and its interquartile interval (p25, p75) …"""
        samples = self.samples_ms
        if samples:
            return Summary.of(samples)
        # A pytest-benchmark entry may come with its summary only.
        timing = self.ok[-1].timing if self.ok else None
        return (timing.stats if timing else None) or Summary()

    @property
    def median_ms(self) -> float | None:
        return self.summary.median

    @property
    def round_medians_ms(self) -> list[float]:
        """Each ok round's median step time (:attr:`CaseResult.round_median_ms`)."""
        return [m for r in self.ok if (m := r.round_median_ms) is not None]

    @property
    def level_ms(self) -> float | None:
        """The median of the rounds' median step times (None without a timed round)."""
        medians = self.round_medians_ms
        return float(np.median(medians)) if medians else None

    def throughput(self, median_ms: float | None = None) -> Throughput:
        """Tokens/s, TFLOP/s and MFU at ``median_ms`` (default: the pooled median).

        From the workload's tokens and FLOPs per step as stored; the stored
        rates (the last round's part itself, empty where it has none) when
        there is no step time to recompute them from.
        """
        median = self.median_ms if median_ms is None else median_ms
        return Throughput.at(self.last.throughput, median, self.peak_tflops, self.records[-1].nproc)

    @property
    def tokens_per_s(self) -> float | None:
        """Tokens per second at the round level (:attr:`level_ms`), as compared between runs."""
        level = self.level_ms
        if level is None:
            return None
        return self.throughput(level).tokens_per_s if self._tokens_per_step else None

    @property
    def _tokens_per_step(self) -> float | None:
        last = self.records[-1]
        return last.throughput.tokens_per_step if last.throughput else None

    @property
    def memory_peaks(self) -> list[float]:
        """The peak memory of each ok round (rounds without one left out)."""
        return [m for r in self.ok if (m := r.peak_memory)]

    @property
    def busy_fraction(self) -> float | None:
        """The median over ok rounds of the fraction of the step the GPU was busy."""
        busy = [b for r in self.ok if (b := r.busy_fraction) is not None]
        return float(np.median(busy)) if busy else None


def by_case(records: Iterable[CaseResult], peak_tflops: PeakRates | None = None,
            by_device: bool = False) -> dict[Any, CaseRounds]:
    """Records grouped by case id (and device name, with ``by_device``), in first-seen order."""
    groups: dict[Any, list[CaseResult]] = {}
    for r in records:
        key = (r.case_id, r.device_name) if by_device else r.case_id
        groups.setdefault(key, []).append(r)
    return {k: CaseRounds(v, peak_tflops) for k, v in groups.items()}


# --- a run ---------------------------------------------------------------------------------------


REJUDGED = "parity judged again"
"""What the notice of :func:`judge_parity` starts with (after the file), when a verdict changed."""


def judge_parity(records: Sequence[CaseResult], rejudge: bool = False, where: str = "",
                 cause: str = "--rejudge") -> int:
    """Judge the records whose stored verdict is not of this tebench's rules (all of them with ``rejudge``),
    against the references among ``records``; returns how many verdicts changed.

    A verdict stored with :data:`parity.PARITY_RULES` is taken as it is: it was judged over the whole run
    by the same rules. One without (written before the field, or by a run's executor, which sees only the
    records before it) or with other rules is judged again (:func:`parity.attach`). When that changes
    a verdict, one warning for the run (``where``: its file) says how many and why (``cause``: why
    ``rejudge`` is on, in words; the user's ``--rejudge`` unless a caller says otherwise).
    """
    stale = [r for r in records if parity_rules.judgeable(r) and (rejudge or not parity_rules.current(r))]
    if not stale:
        return 0
    before = [r.parity.verdict if r.parity is not None else None for r in stale]
    parity_rules.attach(records, stale)
    changed = [(r, old) for r, old in zip(stale, before)
               if old is not None and (r.parity.verdict if r.parity is not None else None) != old]
    if changed:
        first, old = changed[0]
        new = first.parity.verdict if first.parity is not None else None
        unknown = sorted({repr(v) for v in before if v is not None and v not in parity_rules.PARITY_VERDICTS})
        why = (cause if rejudge else
               f"stored without rules or by other rules than this tebench's {parity_rules.PARITY_RULES}"
               + (f", or as no verdict ({', '.join(unknown)})" if unknown else ""))
        warnings.warn(f"{where + ': ' if where else ''}{REJUDGED} ({why}): {len(changed)} of {len(stale)} "
                      f"verdict(s) changed from the stored one (first: {first.case_id} round {first.round_no}: "
                      f"{old} -> {new})", stacklevel=2)
    return len(changed)


def from_run(run: results.Run, judge: bool = True, rejudge: bool = False) -> results.Run:
    """A run read by :func:`results.read`, narrowed to the last record of each (case, round)
    (:meth:`~tebench.store.reader.Run.last_records`), parity judged where the stored verdict is not of
    this tebench's rules (every verdict with ``rejudge``; none when ``judge`` is False): :func:`judge_parity`."""
    orphans = run.orphans() if len(run.run_ids) == 1 else []
    if orphans:
        # A header of another run put above these records (files joined by hand): they are of no run the file
        # holds, as in a file of several runs, and are not reported, compared or stored under that header's run.
        _warn_orphans(run, orphans)
        run = run.of_run(run.run_ids[0])
    _warn_remeasured(run)
    last = run.last_records()
    if judge:
        judge_parity(last.cases, rejudge, run.path)
    return last


def _warn_remeasured(run: results.Run) -> None:
    """Warn where one (case, round) of a run has two ok records: the last is used, as after a retried round, but a
    run never measures one round twice, so the file was edited or joined by hand and the first measurement is
    silently dropped."""
    seen: dict[tuple[str | None, str, int], int] = {}
    twice: list[tuple[str, int, int, int]] = []
    for record, line in zip(run.cases, run.case_lines or [0] * len(run.cases)):
        if record.status != "ok":
            continue
        key = (record.run_id, record.case_id, record.round_no)
        if key in seen:
            twice.append((record.case_id, record.round_no, seen[key], line))
        seen[key] = line
    if twice:
        case_id, round_no, first, again = twice[0]
        more = f"; and {len(twice) - 1} more" if len(twice) > 1 else ""
        warnings.warn(f"{run.path}: {len(twice)} round(s) measured twice in one run; the later record is used (first: "
                      f"{case_id} round {round_no}, lines {first} and {again}{more})", stacklevel=3)


def _warn_orphans(run: results.Run, orphans: list[tuple[results.CaseResult, int]]) -> None:
    (first, line), more = orphans[0], len(orphans) - 1
    warnings.warn(f"{run.path}: {len(orphans)} case record(s) of a run with no header in the file, left out of "
                  f"every run it holds (first: {run.path}:{line}: line {line}, {first.case_id} of run "
                  f"{first.run_id}: [run_id] = {first.run_id!r}{f'; and {more} more' if more else ''}); its run ids "
                  f"are {', '.join(map(str, run.run_ids))}", stacklevel=3)


def read(path: str | Path, judge: bool = True, rejudge: bool = False, without: tuple[str, ...] = ()) -> results.Run:
    """Read a results file or run directory (see :func:`results.read`, and its ``without``) into typed records
    (parity: see :func:`from_run`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = results.read(path, without)
    # Warned again from the caller's line, as results.read warns: one place (this function)
    # for every reader would let Python show a file's skipped-lines warning only once per process.
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=2)
    return from_run(run, judge, rejudge)


def runs_in(path: str | Path, rejudge: bool = False) -> list[results.Run]:
    """Each run a results file holds, apart (runs appended to one file, as ``reports/h200-nightly``), each read
    as :func:`read` reads a file of one run: its own headers and the last record of each of its cases and
    rounds, parity judged among them as :func:`judge_parity` does. A file of one run gives one."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = results.read(path)
    ids = run.run_ids
    # The warning that one run's records replace another's says nothing once the runs are taken apart.
    for w in caught:
        if len(ids) <= 1 or "replaced by another" not in str(w.message):
            warnings.warn(w.message, w.category, stacklevel=2)
    if len(ids) <= 1:
        return [from_run(run, rejudge=rejudge)]
    orphans = run.orphans()
    if orphans:
        _warn_orphans(run, orphans)
    out = []
    for run_id in ids:
        one = run.of_run(run_id).last_records()
        judge_parity(one.cases, rejudge, f"{run.path} (run {run_id})")
        out.append(one)
    return out

