"""Figures drawn to PNG bytes, in forked processes where that helps: the report's drawing pool.

Drawing is CPU-bound Python (matplotlib's Agg renderer and the PNG encoder),
so on Linux each figure is drawn in one of a few forked processes. A forked
process has the parent's memory, so the jobs (closures over the loaded
results) reach it without pickling; only PNG bytes travel back.

Drawing makes and drops hundreds of thousands of small objects, and Python's
cycle collector would walk the whole heap (the loaded results too) again and
again meanwhile: a tenth of the drawing time. So the heap as it is when drawing
starts is frozen (``gc.freeze``: never walked, and in a forked process never
written to, which copy-on-write would copy), the collector is off while a
figure is drawn, and what that figure left is collected once after it.
"""

from __future__ import annotations

import gc
import io
import multiprocessing as mp
import signal
import sys
from typing import Any, Callable, Sequence

from tebench import envvars
from tebench.gc_control import collector_off, frozen_heap
from tebench.cpus import usable_cpus
from tebench.report import charts

Draw = Callable[[], Any]
"""A function drawing one Figure, or returning None where there is nothing to draw."""

PNG_SETTINGS: dict[str, Any] = {"compress_level": 1}
"""Pillow's PNG options. zlib level 1 instead of 6: a third less encoding time (0.36 s → 0.25 s for the
nightly's loss chart) for up to 14% more bytes; the pixels are the same, and no test or reader
compares a chart's bytes with a stored one (docs/findings/speed.md)."""

_STOPPING = {signal.SIGINT, signal.SIGTERM}

_child_jobs: Sequence[Draw] = ()
"""The jobs, in a forked drawing process only: set there by its initializer (:func:`_start_child`) from
the parent's memory. The parent never sets it, so calls of :func:`draw_all` share no state."""


def png_bytes(fig: Any) -> bytes:
    """A figure as PNG bytes (the resolution every report chart uses)."""
    buf = io.BytesIO()
    charts.lean_ticks(fig)
    fig.savefig(buf, format="png", dpi=charts.DPI, pil_kwargs=PNG_SETTINGS)
    return buf.getvalue()


def draw(job: Draw) -> bytes | None:
    """One job's figure as PNG bytes; None where it has nothing to draw."""
    fig = job()
    return None if fig is None else png_bytes(fig)


def _draw_collected(job: Draw) -> bytes | None:
    """:func:`draw`, then the cycles the figure left collected (the collector is off while drawing)."""
    try:
        return draw(job)
    finally:
        gc.collect()


def _draw_in_child(i: int) -> bytes | None:
    return _draw_collected(_child_jobs[i])


def _start_child(jobs: Sequence[Draw]) -> None:
    # A Ctrl-C reaches the whole process group: the parent stops the pool (SIGTERM, which ends a
    # child quietly). A child that also raised KeyboardInterrupt would print a traceback, and one
    # that died of it leaves multiprocessing's Pool waiting forever on its lost task. The child
    # was forked with these signals blocked (see draw_all), so none arrives before this runs.
    global _child_jobs
    _child_jobs = jobs
    gc.disable()  # forked with the parent's heap frozen; each figure's leftovers collected after it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)


def processes(count: int) -> int:
    """How many drawing processes for ``count`` figures: ``TEBENCH_REPORT_PROCESSES``, else the usable
    CPUs, at most 4 (:func:`tebench.cpus.usable_cpus`); never more than the jobs."""
    chosen = envvars.report_processes()  # a value that is not a plain count: the default
    return min(count, chosen or min(4, usable_cpus()))


class Drawing:
    """Figures being drawn while the caller does other work: started here, collected by :meth:`result`.

    On Linux the figures are drawn in :func:`processes` forked processes, handed out one at a time in
    the order given (so the largest first keeps them all busy), while the parent goes on (the report's
    tables are built meanwhile). Anywhere else, or with one process, they are drawn in turn, here and
    now: then, as in a forked process, a figure sees its data as it was when drawing started. Use it
    as a context manager: leaving it stops processes still drawing.
    """

    def __init__(self, jobs: Sequence[Draw]):
        self._jobs = list(jobs)
        self._pool: Any = None
        self._pending: Any = None
        self._drawn: list[bytes | None] = []
        workers = processes(len(self._jobs))
        if workers <= 1 or sys.platform != "linux":
            with frozen_heap(), collector_off():
                self._drawn = [_draw_collected(job) for job in self._jobs]
            return
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)  # until the children exist
        try:
            with frozen_heap():  # for good in the children; in this process, only while forking
                self._pool = mp.get_context("fork").Pool(workers, initializer=_start_child,
                                                         initargs=(self._jobs,))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # a signal held meanwhile arrives here
        self._pending = self._pool.map_async(_draw_in_child, range(len(self._jobs)), chunksize=1)

    def result(self) -> list[bytes | None]:
        """PNG bytes of each job's figure, in the jobs' order (None where a job has nothing to draw)."""
        if self._pending is None:
            return self._drawn
        return list(self._pending.get())

    def __enter__(self) -> Drawing:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.terminate()  # what Pool's own context manager does; a no-op once all is drawn
            self._pool = None


def draw_all(jobs: Sequence[Draw]) -> list[bytes | None]:
    """PNG bytes of each job's figure (None where a job has nothing to draw), each drawn once (:class:`Drawing`)."""
    with Drawing(jobs) as drawing:
        return drawing.result()
