"""The results file: versioned JSON Lines, appended one record per finished case.

``results.jsonl`` holds a ``header`` record per invocation (the environment,
the matrix, the command) followed by ``case`` records. Each record carries
``schema`` and ``schema_version``; a file from a newer tebench, or one too old
to read, is refused with a message that says what to do. A line cut short by
a killed process, or a record without the shape readers rely on, is skipped
with a warning naming ``file:line``, so the rest stays usable. Records are
written as strict JSON: a NaN or inf becomes null, listed in the record's
``non_finite`` note, and is restored on reading.
"""

from __future__ import annotations

import json
import math
import unicodedata
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from tebench.schema.version import RecordError, SCHEMA, STATUSES, SchemaError, check_version


RESULTS_NAME = "results.jsonl"


@dataclass
class Run:
    """Everything one results file (or several merged) holds."""

    path: str
    headers: list[dict[str, Any]] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)
    skipped_lines: int = 0
    problems: list[str] = field(default_factory=list)
    """``file:line: what is wrong`` for each skipped line."""

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


def results_path(path: str | Path) -> Path:
    """Accept a run directory or a results file."""
    p = Path(path)
    return p / RESULTS_NAME if p.is_dir() else p


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _expect(record: dict[str, Any], key: str, kinds: tuple[type, ...], where: str = "",
            required: bool = False) -> Any:
    """``record[key]`` if it is one of ``kinds`` (None allowed when not required)."""
    path = f"{where}{key}"
    if key not in record or record[key] is None:
        if required:
            raise RecordError(path, None, "missing")
        if dict in kinds or list in kinds:
            # Readers write record.get("timing", {}): an explicit null must read as absent.
            record.pop(key, None)
        return None
    value = record[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join("object" if k is dict else "array" if k is list else k.__name__ for k in kinds)
        raise RecordError(path, value, f"must be {names}")
    return value


def _numbers(values: Any, path: str, *, allow_none: bool, finite: bool) -> None:
    for i, v in enumerate(values):
        if v is None and allow_none:
            continue
        if not _is_number(v):
            raise RecordError(f"{path}[{i}]", v, "must be a number")
        if finite and not math.isfinite(v):
            raise RecordError(f"{path}[{i}]", v, "must be a finite number")


def _number_table(table: dict[str, Any], path: str, text: tuple[str, ...] = ()) -> None:
    """A table of measured values: finite numbers, or None for 'not measured'; ``text`` keys hold strings.

    Readers do arithmetic on these values: a string where a number belongs
    must be refused here, not raise a TypeError in compare or the report.
    """
    for key, v in table.items():
        if v is None:
            continue
        if key in text:
            if not isinstance(v, str):
                raise RecordError(f"{path}.{key}", v, "must be a string or null")
        elif not _is_number(v):
            raise RecordError(f"{path}.{key}", v, "must be a number or null")
        elif not math.isfinite(v):
            raise RecordError(f"{path}.{key}", v, "must be a finite number or null")


def _check_case(record: dict[str, Any]) -> None:
    case_id = _expect(record, "case_id", (str,), required=True)
    if not case_id or any(unicodedata.category(ch) == "Cc" for ch in case_id):
        raise RecordError("case_id", case_id, "must be a non-empty id without control characters")
    rnd = _expect(record, "round", (int,))
    if rnd is not None and rnd < 0:
        raise RecordError("round", rnd, "must be 0 or more")
    case = _expect(record, "case", (dict,), required=True)
    # torch-free; imported here to keep results.py a leaf module
    from tebench.schema.knobs import FieldError, build
    from tebench.plan.matrix import Case, Settings

    try:
        normal = Case.from_dict(case).to_dict()
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordError("case", case, f"not a case description ({type(exc).__name__}: {exc})") from None
    try:
        build(Settings, normal["settings"], require_all=False, limits=False)
    except FieldError as exc:
        raise RecordError(f"case.settings.{exc.key}", exc.value, str(exc)) from None
    if not isinstance(normal["dims"], dict) or not isinstance(normal["nproc"], int):
        raise RecordError("case.dims", normal["dims"], "must be an object (and case.nproc an integer)")
    for key in ("workload", "size", "mode", "parallel"):
        if not isinstance(normal[key], str):
            raise RecordError(f"case.{key}", normal[key], "must be a string")
    record["case"] = normal  # settings filled in with their defaults: readers index them directly
    status = _expect(record, "status", (str,), required=True)
    if status not in STATUSES:
        raise RecordError("status", status, f"unknown status (known: {', '.join(STATUSES)})")
    _expect(record, "reason", (str,))
    for key in ("device", "memory", "validation", "gpu_busy", "setup", "phases", "distributed", "throughput",
                "parity", "fp8_state"):
        _expect(record, key, (dict,) if key != "fp8_state" else (dict, list))
    if record.get("device"):
        # Readers key cases by device name: it must be hashable text.
        for key in ("type", "name"):
            _expect(record["device"], key, (str,), "device.")
    if record.get("throughput"):
        _number_table(record["throughput"], "throughput", text=("mfu_basis",))
    if record.get("memory"):
        _number_table(record["memory"], "memory", text=("kind",))
    timing = _expect(record, "timing", (dict,))
    if timing is not None:
        samples = _expect(timing, "samples_ms", (list,), "timing.", required=True)
        if not samples:
            raise RecordError("timing.samples_ms", samples, "must hold at least one sample")
        _numbers(samples, "timing.samples_ms", allow_none=False, finite=True)
        stats = _expect(timing, "stats", (dict,), "timing.")
        if stats is not None:
            _number_table(stats, "timing.stats")
    loss = _expect(record, "loss", (dict,))
    if loss is not None:
        per_step = _expect(loss, "per_step", (list,), "loss.", required=True)
        # A diverged run's curve legitimately holds NaN or inf: keep it. A null is not
        # one of those (the writer's nulls were put back above): parity cannot judge it.
        _numbers(per_step, "loss.per_step", allow_none=False, finite=False)
        for key in ("first", "final"):
            _expect(loss, key, (int, float), "loss.")
    parity = record.get("parity")
    if parity:
        _expect(parity, "verdict", (str,), "parity.", required=True)
        _expect(parity, "reason", (str,), "parity.")


def _check_header(record: dict[str, Any]) -> None:
    _expect(record, "run_id", (str,))
    env = _expect(record, "env", (dict,))
    if env is not None:
        gpus = _expect(env, "gpus", (list,), "env.")
        for i, gpu in enumerate(gpus or []):
            if not isinstance(gpu, dict) or not isinstance(gpu.get("name"), str):
                raise RecordError(f"env.gpus[{i}]", gpu, "must be an object with a string name")
        _expect(env, "env_vars", (dict,), "env.")
        peak = _expect(env, "peak_tflops", (dict,), "env.")  # throughput divides by it (MFU)
        if peak is not None:
            _number_table(peak, "env.peak_tflops", text=("match", "source"))
    _expect(record, "devices", (list,))
    ab = _expect(record, "ab", (dict,))  # a side of `tebench ab`: compare pairs sides by id
    if ab is not None:
        _expect(ab, "id", (str,), "ab.")
        _expect(ab, "env", (dict,), "ab.")
    ids = _expect(record, "case_ids", (list,))
    if ids is not None and not all(isinstance(i, str) for i in ids):
        raise RecordError("case_ids", ids, "must be an array of strings")
    _expect(record, "matrix", (dict,))
    excluded = _expect(record, "excluded", (list,))  # optional: headers before it have none
    for i, entry in enumerate(excluded or []):
        if not (isinstance(entry, dict) and isinstance(entry.get("rule"), dict)
                and isinstance(entry.get("reason"), (str, type(None)))
                and isinstance(entry.get("cases"), int) and not isinstance(entry.get("cases"), bool)):
            raise RecordError(f"excluded[{i}]", entry, "must be an object with a rule object, "
                                                       "a reason (string or null) and an integer cases")
    rounds = _expect(record, "rounds", (int,))
    if rounds is not None and rounds < 1:
        raise RecordError("rounds", rounds, "must be at least 1")
    shard = _expect(record, "shard", (list,))
    if shard is not None and (len(shard) != 2 or not all(isinstance(x, int) and not isinstance(x, bool)
                                                         for x in shard)):
        raise RecordError("shard", shard, "must be [I, N]")


def check_record(record: Any) -> None:
    """Raise RecordError when a (schema-checked) record lacks the shape every reader relies on.

    Case records may be normalised in place (their case settings completed).
    """
    if not isinstance(record, dict):
        raise RecordError("", record, f"not a JSON object but {type(record).__name__}")
    kind = record.get("type")
    if kind == "header":
        _check_header(record)
    elif kind == "case":
        _check_case(record)
    else:
        raise RecordError("type", kind, "unknown record type (known: header, case)")


def _restore_non_finite(record: dict[str, Any]) -> None:
    """Put back the NaN/inf values the writer replaced with null (listed in ``non_finite``)."""
    notes = record.get("non_finite")
    if not isinstance(notes, list):
        return
    for note in notes:
        try:
            *parents, last = note["path"]
            target: Any = record
            for key in parents:
                target = target[key]
            if target[last] is None:
                target[last] = float(note["value"])
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # a damaged note: the value stays null, which readers treat as "not measured"


def read(path: str | Path) -> Run:
    """Read a results file or run directory.

    Lines that cannot be read (cut short by a kill, not JSON, not a record of
    the right shape) are skipped with a warning naming ``file:line`` and the
    problem; a file that is not a tebench results file at all, or was written
    by a newer schema, is refused with SchemaError. OSError when it cannot be read.
    """
    file = results_path(path)
    if not file.is_file():
        raise FileNotFoundError(f"{path}: no results file ({file} does not exist or is not a file)")
    run = Run(path=str(file))
    problems: list[str] = []
    seen_record = False
    with file.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            where = f"{file}:{lineno}"
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
                # A process killed mid-write leaves a partial line; the case it
                # belonged to simply has no record and is re-run by --resume.
                problems.append(f"{where}: {'not UTF-8 text' if isinstance(exc, UnicodeDecodeError) else 'not JSON'}")
                continue
            if not isinstance(record, dict) or record.get("schema") != SCHEMA:
                if not seen_record:
                    if isinstance(record, dict):
                        check_version(record, where)  # raises: names the foreign schema
                    raise SchemaError(f"{where}: not a tebench results record (a JSON {type(record).__name__})")
                problems.append(f"{where}: not a tebench results record")
                continue
            check_version(record, where)  # a newer schema refuses the whole file
            seen_record = True
            try:
                _restore_non_finite(record)
                check_record(record)
            except RecordError as exc:
                problems.append(f"{where}: {exc}")
                continue
            if record["type"] == "header":
                run.headers.append(record)
            else:
                run.cases.append(record)
    run.skipped_lines = len(problems)
    run.problems = problems
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        warnings.warn(f"{file}: skipped {len(problems)} unreadable line(s): {shown}", stacklevel=2)
    if not run.headers:
        why = f" ({len(problems)} line(s) unreadable, first {problems[0]})" if problems else ""
        raise SchemaError(f"{file}: no header record{why}; not a tebench results file")
    return run
