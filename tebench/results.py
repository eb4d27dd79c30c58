"""The results file: versioned JSON Lines, appended one record per finished case.

``results.jsonl`` holds a ``header`` record per invocation (the environment,
the matrix, the command) followed by ``case`` records. Each record carries
``schema`` and ``schema_version``; a file from a newer tebench, or one too old
to read, is refused with a message that says what to do. A line cut short by
a killed process is skipped with a warning, so the rest stays usable.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

SCHEMA = "tebench.results"
SCHEMA_VERSION = 1
MIN_READABLE_VERSION = 1
STATUSES = ("ok", "skipped", "failed", "oom", "timeout", "diverged")
RESULTS_NAME = "results.jsonl"


class SchemaError(ValueError):
    """A results file this tebench cannot read."""


@dataclass
class Run:
    """Everything one results file (or several merged) holds."""

    path: str
    headers: list[dict[str, Any]] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)
    skipped_lines: int = 0

    @property
    def header(self) -> dict[str, Any]:
        """The first header: the run's identity and environment."""
        return self.headers[0] if self.headers else {}

    @property
    def env(self) -> dict[str, Any]:
        return self.header.get("env", {})

    @property
    def run_id(self) -> str:
        return self.header.get("run_id", "")

    def latest(self) -> dict[tuple[str, int], dict[str, Any]]:
        """The last record of each (case id, round): a resumed run may have re-run one."""
        out: dict[tuple[str, int], dict[str, Any]] = {}
        for record in self.cases:
            out[(record["case_id"], record.get("round", 0))] = record
        return out


def peak_memory(record: dict[str, Any]) -> float | None:
    """A case's peak memory: CUDA max allocated on a GPU, the process peak RSS on a CPU."""
    mem = record.get("memory") or {}
    return mem.get("peak_allocated_bytes") or mem.get("peak_rss_bytes")


def results_path(path: str | Path) -> Path:
    """Accept a run directory or a results file."""
    p = Path(path)
    return p / RESULTS_NAME if p.is_dir() else p


def check_version(record: dict[str, Any], where: str) -> None:
    """Refuse records from an unknown schema with a clear, actionable message."""
    if record.get("schema") != SCHEMA:
        raise SchemaError(f"{where}: not a tebench results record (schema={record.get('schema')!r})")
    version = record.get("schema_version")
    if not isinstance(version, int):
        raise SchemaError(f"{where}: record has no integer schema_version")
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"{where}: written with results schema v{version}, but this tebench reads up to v{SCHEMA_VERSION}; "
            "upgrade tebench to read it"
        )
    if version < MIN_READABLE_VERSION:
        raise SchemaError(
            f"{where}: results schema v{version} is older than the oldest this tebench reads "
            f"(v{MIN_READABLE_VERSION}); re-render it with the tebench release that wrote it, or re-run"
        )


def read(path: str | Path) -> Run:
    """Read a results file or run directory. Raises SchemaError / OSError with the path in the message."""
    file = results_path(path)
    if not file.is_file():
        raise FileNotFoundError(f"{path}: no results file ({file} does not exist)")
    run = Run(path=str(file))
    with file.open("r", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                # A process killed mid-write leaves a partial line; the case it
                # belonged to simply has no record and is re-run by --resume.
                run.skipped_lines += 1
                continue
            check_version(record, f"{file}:{lineno}")
            if record.get("type") == "header":
                run.headers.append(record)
            elif record.get("type") == "case":
                run.cases.append(record)
    if run.skipped_lines:
        warnings.warn(f"{file}: skipped {run.skipped_lines} unreadable line(s) (a run killed mid-write?)")
    if not run.headers:
        raise SchemaError(f"{file}: no header record; not a tebench results file")
    return run


class Writer:
    """Appends records durably: each line is flushed and fsync'd before the next case starts."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # A previous run killed mid-line would glue our first record to its
        # fragment; start on a fresh line instead.
        needs_newline = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
        self._fh = path.open("a", encoding="utf-8")
        if needs_newline:
            self._fh.write("\n")

    def append(self, record: dict[str, Any]) -> None:
        record = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **record}
        self._fh.write(json.dumps(record, allow_nan=True, default=_jsonable) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def write_all(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Write a complete results file (used by merge)."""
    if path.exists():
        path.unlink()
    with Writer(path) as w:
        for record in records:
            w.append({k: v for k, v in record.items() if k not in ("schema", "schema_version")})
