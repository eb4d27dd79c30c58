"""Progress on stderr: a live line on a terminal, and one line per finished case."""

from __future__ import annotations

import sys
import threading
import time
from typing import Protocol
from tebench.escape import for_terminal, terminal_lines
from tebench.schema.records import CaseResult, Throughput


class Progress(Protocol):
    """What the executor tells about its cases: :class:`Display`, or one side's view of it (:class:`SideDisplay`)."""

    def start(self, key: str) -> None:
        """A case (``key``: its id and round) started."""

    def update(self, key: str, label: str, phase: str, step: int, steps: int) -> None:
        """A case's worker reached ``step`` of ``steps`` of ``phase``."""

    def finish(self, record: CaseResult) -> None:
        """A case was recorded."""


class Display:
    """Progress on stderr: a live line on a terminal, one line per finished case always.

    Each line starts ``[i/n]``, ``i`` padded to the width of ``n`` (``[ 9/19]``, ``[10/19]``), so the
    lines of a run stay in one column. With ``rounds`` above 1 a case's line names its round as
    ``round k/N`` (1-based), as ``tebench ab`` does.
    """

    def __init__(self, total: int, live: bool | None, stream=None, rounds: int = 1,
                 costs: dict[tuple[str, int], float] | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.total = total
        self.rounds = rounds
        self.done = 0
        self.lock = threading.Lock()
        self.started: dict[str, float] = {}
        self.costs = costs or {}
        """Each (case id, round)'s relative cost (plan.shards.estimate_cost, 0 for a skip): what is left of the
        run is estimated from the pace so far, weighted by them. None: every case weighs the same."""
        self.begun = time.monotonic()
        self.cost_done = 0.0

    def _cost(self, case_id: str, round_: int) -> float:
        return self.costs.get((case_id, round_), 0.0 if self.costs else 1.0)

    def run_progress(self) -> str:
        """The whole run so far: "run 3m12s, ~5m left" (left at the pace so far); "" before the first cost."""
        elapsed = time.monotonic() - self.begun
        total_cost = sum(self.costs.values()) if self.costs else float(self.total)
        if self.done >= self.total or self.cost_done <= 0 or total_cost <= self.cost_done:
            return f"run {duration(elapsed)}" if self.done else ""
        left = elapsed * (total_cost - self.cost_done) / self.cost_done
        return f"run {duration(elapsed)}, ~{duration(left)} left"

    def _clear(self) -> None:
        if self.live:
            self.stream.write("\r\033[K")

    def update(self, key: str, label: str, phase: str, step: int, steps: int) -> None:
        if not self.live:
            return
        with self.lock:
            elapsed = time.monotonic() - self.started.get(key, time.monotonic())
            eta = ""
            if phase in ("warmup", "measure") and step > 0:
                eta = f" ETA {elapsed / step * (steps - step):.0f}s"
            self._clear()
            run = self.run_progress()
            line = (f"{self._count(self.done + 1)} {for_terminal(label)} {phase} {step}/{steps}{eta}"
                    + (f" · {run}" if run else ""))
            self.stream.write(line[:160])
            self.stream.flush()

    def _count(self, index: int) -> str:
        """``[i/n]``, ``i`` right-aligned to the width of ``n``."""
        return f"[{index:>{len(str(self.total))}}/{self.total}]"

    def start(self, key: str) -> None:
        with self.lock:
            self.started[key] = time.monotonic()

    def finish(self, record: CaseResult, prefix: str = "", show_round: bool = True) -> None:
        with self.lock:
            self.done += 1
            self.cost_done += self._cost(record.case_id, record.round_no)
            self._clear()
            # A case's reason may quote a worker's or a plugin's output: shown, not obeyed.
            # A reason of several lines (a dead worker's log tail) shows its first on the case's line and the
            # rest indented under it: escaped, "\x0a" on one line was unreadable.
            first, more = terminal_lines(summary_line(record, self.rounds if show_round else 1))
            run = self.run_progress() if self.total > 1 else ""
            self.stream.write(f"{self._count(self.done)} {prefix}{first}" + (f" · {run}" if run else "") + "\n"
                              + "".join(f"{m}\n" for m in more))
            self.stream.flush()


class SideDisplay:
    """One side's view of a shared :class:`Display` (``tebench ab``): every line names the side and round,
    since each case runs once per side and round."""

    def __init__(self, display: Display, side: str, rounds: int):
        self.display, self.side, self.rounds = display, side, rounds

    def _prefix(self, round_: int | None) -> str:
        return f"{self.side}, {round_label(round_, self.rounds)}: "

    def start(self, key: str) -> None:
        self.display.start(key)

    def update(self, key: str, label: str, phase: str, step: int, steps: int) -> None:
        self.display.update(key, f"{self.side}: {label}", phase, step, steps)

    def finish(self, record: CaseResult) -> None:
        # The round is in the prefix; the summary line would repeat it.
        self.display.finish(record, prefix=self._prefix(record.round), show_round=False)


def duration(seconds: float) -> str:
    """``45s``, ``3m12s``, ``2h05m``."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def round_label(round_: int | None, rounds: int) -> str:
    """A round as a person counts it: ``round k/N``, 1-based (a record's ``round`` is 0-based)."""
    return f"round {(round_ or 0) + 1}/{rounds}"


def summary_line(r: CaseResult, rounds: int = 1) -> str:
    """One human-readable line for a finished case; with ``rounds`` above 1 it names its round (``round k/N``)."""
    head = f"{r.status:<8} {r.case_id}" + (f" ({round_label(r.round, rounds)})" if rounds > 1 else "")
    summary = r.summary
    if r.status in ("ok", "diverged") and summary.median is not None:
        tp = r.throughput or Throughput()
        bits = [f"{summary.median:.2f} ms/step (IQR {summary.iqr:.2f})"]
        if tp.tokens_per_s:
            bits.append(f"{tp.tokens_per_s:,.0f} tok/s")
        if tp.mfu is not None:
            bits.append(f"MFU {tp.mfu * 100:.1f}%")
        if r.verdict:
            bits.append(f"parity {r.verdict}")
        return f"{head}: " + ", ".join(bits)
    if r.reason:
        return f"{head}: {r.reason}"
    return head
