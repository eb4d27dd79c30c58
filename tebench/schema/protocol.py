"""The hand-off between the runner and a worker process: environment variables, exit codes and the
protocol lines both sides use.

The worker tells the runner how its case is going in JSON lines (``{"event": "progress", ...}``,
and ``{"event": "ready"}`` from a pre-started worker whose imports are done). They travel on a
pipe of their own: the runner creates it, hands the write end to the worker (``pass_fds``) and
names its number in :data:`PROTOCOL_FD_ENV`. The worker's stdout and stderr are then only the
case's log, so whatever a workload prints, JSON that looks like a protocol line included, is
output and nothing else.

Where the write end cannot be inherited the worker falls back to its stdout, as before there was
a pipe: torchrun starts the ranks of a data-parallel case and closes every descriptor it was not
told about, so those cases get no pipe, and rank 0 prints the protocol lines on stdout among the
workload's own output (the runner keeps only complete progress messages from it).
"""

from __future__ import annotations

import json
from typing import Any

PARENT_ENV = "TEBENCH_PARENT_PID"

PROTOCOL_FD_ENV = "TEBENCH_PROTOCOL_FD"
"""The number of the descriptor a worker writes its protocol lines to; unset: its stdout."""

# The runner's contract (tebench.run.runner.EXIT_STORAGE): the case ran but its
# result could not be written; the runner stops and --resume re-runs the case.
EXIT_STORAGE = 75

PROGRESS = "progress"
READY = "ready"


def progress_line(phase: str, step: int, total: int, step_ms: float | None = None) -> str:
    """One progress message as the line the worker writes (newline included)."""
    msg: dict[str, Any] = {"event": PROGRESS, "phase": phase, "step": step, "total": total}
    if step_ms is not None:
        msg["step_ms"] = step_ms
    return json.dumps(msg) + "\n"


def ready_line() -> str:
    """A pre-started worker's word that its imports are done (newline included)."""
    return json.dumps({"event": READY}) + "\n"


def parse(line: str) -> dict[str, Any] | None:
    """The protocol message on one line, or None for anything else (a workload's own output, JSON
    included: only a complete progress message, or a ready event, is one)."""
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(msg, dict):
        return None
    if msg.get("event") == READY and len(msg) == 1:
        return msg
    if msg.get("event") != PROGRESS:
        return None
    counts = (msg.get("step"), msg.get("total"))
    if not isinstance(msg.get("phase"), str) or not all(isinstance(n, int) and not isinstance(n, bool) for n in counts):
        return None
    return msg
