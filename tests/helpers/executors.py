"""Executors built by their own constructor with cheap parts, for tests of one of their methods.

Nothing starts until a test calls a method: the constructor only resolves the options and makes the
output folder's ``.work`` and ``logs``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from tebench.schema.environment import Environment
from tebench.run.display import Display
from tebench.run.executor import Executor
from tebench.run.options import RunOptions
from tebench.schema.records import CaseResult


class KeptLines:
    """A writer that keeps what it is given, as ``Writer.append`` would serialize it, and writes no file."""

    def __init__(self) -> None:
        self.path = "results.jsonl"
        self.lines: list[str] = []

    def append(self, record: CaseResult) -> None:
        """Keep the record's line."""
        self.lines.append(json.dumps(record.to_dict()))


def build_executor(out: Path, opts: RunOptions | None = None, *, env: Environment | None = None,
                   records: list[CaseResult] | None = None, writer: KeptLines | None = None,
                   display: Display | None = None, run_id: str = "run-1") -> Executor:
    """An Executor of run ``run_id`` writing under ``out`` (``opts`` when given), on the CPU unless ``env``
    says otherwise; it keeps its records in ``writer`` (a new ``KeptLines`` by default) and shows them on
    a display that writes to memory."""
    return Executor(opts or RunOptions(out=out), env or Environment(device_type="cpu"), run_id,
                    writer or KeptLines(),  # type: ignore[arg-type]  # duck-typed: a Writer's append and path
                    [] if records is None else records,
                    display or Display(0, live=False, stream=io.StringIO()))
