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
import re
import sys
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic_core import from_json
from tebench.schema.environment import Environment
from tebench.schema.records import Case, CaseResult, RunHeader
from tebench import bounded
from tebench.escape import short_repr
from tebench.gc_control import collector_off
from tebench.plan import record_checks
from tebench.schema.text import check_text
from tebench.schema.version import SCHEMA, RecordError, SchemaError, check_version
from tebench.store.writer import CASE_LINE_START


RESULTS_NAME = "results.jsonl"
PACKED_NAME = RESULTS_NAME + ".gz"
"""A run's results compressed, as a stored run may be kept (:func:`results_path`)."""

READABLE = (f"tebench reads a tebench results file (JSON Lines whose first record is a header of schema "
            f"\"{SCHEMA}\", as 'tebench run' writes it), a run folder holding {RESULTS_NAME} or {RESULTS_NAME}.gz, "
            f"a {RESULTS_NAME}.gz, or (report only) a pytest-benchmark JSON file")
"""What a file refused as not tebench's says tebench reads: an asv or optimum-benchmark JSON given to
report or compare is told what would have worked."""


@dataclass
class Run:
    """A results file (or several merged) as typed records: the one type of a run, from the reader to the report.

    :func:`read` keeps every record the file holds, in order; :meth:`last_records` keeps the last
    record of each (case id, round), which is what a report, a comparison and the history read once
    :func:`tebench.analysis.judged_run.read` has judged parity over them.
    """

    path: str
    headers: list[RunHeader] = field(default_factory=list)
    header_lines: list[int] = field(default_factory=list)
    """The line number (from 1) each header of :attr:`headers` was read from."""
    cases: list[CaseResult] = field(default_factory=list)
    case_lines: list[int] = field(default_factory=list)
    """The line number (from 1) each record of :attr:`cases` was read from."""
    skipped_lines: int = 0
    problems: list[str] = field(default_factory=list)
    """``file:line: what is wrong`` for each skipped line."""
    replaced: list[str] = field(default_factory=list)
    """``file:line: …`` for each case record that replaced another run's record of the same case and round."""
    mixed: list[str] = field(default_factory=list)
    """``file:line: …`` for each case record whose description (settings) differs from the first record of its
    case in its run: rounds a report or a comparison would pool."""

    @property
    def run_ids(self) -> list[str | None]:
        """The distinct run ids of the headers, in order: more than one when runs were appended to one file."""
        return list(dict.fromkeys(h.run_id for h in self.headers))

    @property
    def header(self) -> RunHeader:
        """The first header: the run's identity and environment (an empty one where there is none)."""
        return self.headers[0] if self.headers else RunHeader()

    @property
    def env(self) -> Environment:
        """The machine the run was on (:attr:`RunHeader.environment`)."""
        return self.header.environment

    @property
    def run_id(self) -> str:
        return self.header.run_id or ""

    @property
    def concurrent(self) -> bool:
        """Whether any of its runs ran cases side by side on several devices (their times are not solo times)."""
        return any(h.concurrent for h in self.headers)

    @property
    def problem_cases(self) -> list[CaseResult]:
        """Cases not ok, or judged on loss parity without passing: what ``tebench run --strict`` fails on."""
        return [r for r in self.cases if r.problem]

    def latest(self) -> dict[tuple[str, int], CaseResult]:
        """The last record of each (case id, round): a resumed run may have re-run one."""
        return {(record.case_id, record.round_no): record for record in self.cases}

    def last_records(self) -> "Run":
        """This run with only the last record of each (case id, round), in the order the file first holds each
        (as :meth:`latest`)."""
        last: dict[tuple[str, int], tuple[CaseResult, int]] = {}
        for record, line in zip(self.cases, self.case_lines or [0] * len(self.cases)):
            last[(record.case_id, record.round_no)] = (record, line)
        return self._with(self.headers, list(last.values()))

    def of_run(self, run_id: str | None) -> "Run":
        """Only the headers and records of run ``run_id`` (of a file that holds several runs, appended). A record
        without a run id is the run's whose header is the last above its line (every run's, for records not
        read from a file)."""
        kept = [(r, n) for r, n in zip(self.cases, self.case_lines or [0] * len(self.cases))
                if (r.run_id or self._run_above(n) or run_id) == run_id]
        headers = [(h, n) for h, n in zip(self.headers, self.header_lines or [0] * len(self.headers))
                   if h.run_id == run_id]
        return self._with([h for h, _ in headers], kept, [n for _, n in headers])

    def orphans(self) -> list[tuple[CaseResult, int]]:
        """The records (and their lines) whose run id names no header of the file: of no run it holds."""
        ids = set(self.run_ids)
        return [(r, n) for r, n in zip(self.cases, self.case_lines or [0] * len(self.cases))
                if r.run_id is not None and r.run_id not in ids]

    def _run_above(self, line: int) -> str | None:
        above = [h.run_id for h, n in zip(self.headers, self.header_lines) if n < line]
        return above[-1] if line and above else None

    def _with(self, headers: list[RunHeader], cases: list[tuple[CaseResult, int]],
              header_lines: list[int] | None = None) -> "Run":
        return Run(self.path, list(headers), self.header_lines if header_lines is None else header_lines,
                   [r for r, _ in cases], [n for _, n in cases] if self.case_lines else [],
                   self.skipped_lines, list(self.problems), list(self.replaced), list(self.mixed))


def _unreadable(exc: Exception, raw: bytes) -> str:
    """Why a line is not a record, in words: cut short, not UTF-8, nested too deep, a byte-order mark."""
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, RecursionError):
        return "JSON nested too deep to read (arrays or objects inside each other thousands of times)"
    if raw.startswith(_BOM):  # past the first line: files joined together, one of them saved with a mark
        return "not JSON: it starts with a UTF-8 byte-order mark (files joined together?); remove the mark"
    return "not JSON"


_BOM = b"\xef\xbb\xbf"
"""UTF-8's byte-order mark, which some editors put at the start of a file they save."""


def results_path(path: str | Path) -> Path:
    """Accept a run directory or a results file (in a directory, ``results.jsonl``, else a compressed
    ``results.jsonl.gz``: how a stored run may be kept)."""
    p = Path(path)
    if not p.is_dir():
        return p
    plain = p / RESULTS_NAME
    packed = p / PACKED_NAME
    return packed if (not plain.exists() and packed.exists()) else plain


def parse_record(record: Any, *, text: bool = True, line: bytes | None = None,
                 cases: dict[str, tuple[Case, bool]] | None = None,
                 without: tuple[str, ...] = ()) -> RunHeader | CaseResult:
    """The typed record of a (schema-checked) JSON object; RecordError when it lacks its declared shape.

    Every field is checked at every depth against its declaration in
    :mod:`tebench.schema.records` (type and limits), then by the plan's pass
    (:mod:`tebench.plan.record_checks`: known mode and recipe, the dimensions and
    settings the matrix declares, the header's environment); text anywhere must be
    valid Unicode, and a case's settings are completed with their defaults (readers
    index them directly). ``text=False`` leaves out the Unicode walk, for a record
    decoded from a line that :func:`may_hold_surrogate` clears. ``line``: the text ``record`` was
    decoded from, which the record keeps for its key order instead of the decoded object, and
    vouches for (:meth:`~tebench.schema.part.PartBase.vouch_line`) where writing the record gives it
    back. ``cases``: the case descriptions already checked while reading one file (its JSON text -> the
    description completed, and whether that changed it), so that the rounds and runs of one case are
    checked once. ``without``: fields a case record whose line is vouched for is held without, once
    checked (:meth:`~tebench.schema.part.PartBase.leave_out`).
    """
    if not isinstance(record, dict):
        raise RecordError("", record, f"not a JSON object but {type(record).__name__}")
    if text:
        check_text(record)
    nulls = [k for k, v in record.items() if v is None and k in _PARTS]
    for key in nulls:
        # A stored null part reads as the part being absent (readers test ``if record.timing``).
        del record[key]
    kind = record.get("type")
    if kind == "header":
        if "case_id" in record:  # a case line whose type was changed: read as a header, its case would vanish
            raise RecordError("type", kind, f"a header holding a case_id ({short_repr(record['case_id'], 80)}): "
                                            "a case line whose type was changed?")
        return RunHeader.from_dict(record, "header", line=line)
    if kind == "case":
        if "round" in record and record["round"] is None:  # no writer stores one; it would read as round 0
            raise RecordError("round", None, "must be an integer from 0: a null round would replace round 0")
        stored, completed = record.get("case"), False
        if isinstance(stored, dict):  # else the record's model names what is wrong
            typed, completed = _checked_case(stored, {} if cases is None else cases)
            record = {**record, "case": typed}  # validated once per description; the record takes it as it is
        case = CaseResult.from_dict(record, "record", line=line)
        if case.case_id != case.case.id:
            # Readers key a case's rounds, a resume and a merge by its id, and label and colour by its case: one
            # that disagrees would file these measurements under another case, or replace that case's own.
            raise RecordError("case_id", case.case_id, f"does not match its case, whose id is {case.case.id!r}")
        if line is not None and not text and not nulls and not completed and "non_finite" not in record \
                and _as_written(line):
            case.vouch_line()
            if without and case.stored_line() is not None:
                case.leave_out(without)
        return case
    raise RecordError("type", kind, "unknown record type (known: header, case)")


_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def may_hold_surrogate(raw: bytes) -> bool:
    """Whether JSON text decoded from strict UTF-8 ``raw`` can hold a lone surrogate.

    Strict UTF-8 cannot encode one, so only a ``\\udXXX`` escape (X from 8) can
    produce it: a line without one needs no walk through its text, which on a
    long file is most of the checking time.
    """
    return _ESCAPED_SURROGATE.search(raw) is not None


_PARTS = {*CaseResult.part_fields(), *RunHeader.part_fields()}
"""Top-level fields that hold a part: a stored null there reads as the part being absent."""


def _checked_case(case: dict[str, Any], checked: dict[str, tuple[Case, bool]]) -> tuple[Case, bool]:
    """The stored case description checked (its declared shape, then the plan's pass) and completed
    (:func:`_normal_case`), and whether completing it changed it (its text included: settings added or
    reordered), once per description in ``checked``: a file's records of one case share it, and the checks took
    a fifth of reading a file of many rounds. Frozen: the records of one case share the one object."""
    key = json.dumps(case)
    known = checked.get(key)
    if known is None:
        read = Case.from_dict(case, "case")
        record_checks.check_case(case)
        normal = _normal_case(read)
        known = checked[key] = (normal, json.dumps(normal.to_dict()) != key)
    return known


def _as_written(line: bytes) -> bool:
    """Whether a case line reads as one that writing its record gives back: it starts as the writer's do (its
    format, the current schema: no upgrade), and holds no NaN or infinity (which the writer stores as null with a
    ``non_finite`` note; text that merely mentions them is passed over too). The rest of the text is not
    checked: a line edited by hand may spell the same values otherwise. A line with an escaped surrogate is the
    caller's."""
    return line.startswith(CASE_LINE_START) and b"NaN" not in line and b"Infinity" not in line


def _normal_case(read: Case) -> Case:
    """A stored case as the plan would write it: built anew, so that it writes every key (an absent one at its
    default, its settings completed, a key this tebench does not know left out)."""
    return read.replace()


class _HugeInt(str):
    """The digits of a JSON integer past Python's int-conversion limit, kept as text to be named."""


def _digits(text: str) -> int | _HugeInt:
    try:
        return int(text)
    except ValueError:  # past sys.get_int_max_str_digits() (4300 by default)
        return _HugeInt(text)


def _find_huge(value: Any, path: str = "") -> tuple[str, str] | None:
    """The path and digits of the first integer :func:`_digits` kept as text, if any."""
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, _HugeInt):
            return where, item
        if isinstance(item, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
    return None


def loads(raw: bytes | str) -> Any:
    """The JSON value of one line: pydantic-core's parser, and for a line it refuses ``json.loads``,
    which says precisely what is wrong, or reads what the fast parser will not (a lone surrogate,
    which :func:`check_text` then names).

    An integer past Python's digit limit (4,300 digits) raises RecordError naming its field
    instead of a ValueError that names nothing: the limit guards int() against quadratic time, and
    no stored field is near it, so such a number is damage.
    """
    try:
        return from_json(raw)
    except ValueError:
        pass
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw  # UnicodeDecodeError: not UTF-8 text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
        found = _find_huge(json.loads(text, parse_int=_digits))
        if found is None:
            raise
        where, digits = found
        raise RecordError(where or "(the record)", f"{digits[:12]}...",
                          f"an integer of {len(digits)} digits, past the {sys.get_int_max_str_digits()}-digit "
                          "limit of any stored number") from None


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


def _replaced_by_another_run(record: CaseResult, run: Run, owners: dict[tuple[Any, Any], tuple[str | None, str]],
                             where: str) -> str | None:
    """A note when a case record of one run replaces another run's record of the same case and round.

    A resumed run appends records of its own run id, and the last one counts, silently. Several runs
    in one file happen too: runs of a matrix's parts appended to one file, a case re-run on its own
    (the last record still counts, as readers always did). Two results files concatenated by
    mistake look the same, so the replacement is never silent: the caller warns with this note.
    """
    run_id = record.run_id or (run.headers[-1].run_id if run.headers else None)  # the run whose header is above
    key = (record.case_id, record.round_no)
    owner = owners.get(key)
    owners[key] = (run_id, where)
    if owner is None or owner[0] == run_id:
        return None
    return f"{where}: case {key[0]} round {key[1]} of run {run_id} replaces run {owner[0]}'s record at {owner[1]}"


def read(path: str | Path, without: tuple[str, ...] = ()) -> Run:
    """Read a results file or run directory.

    Lines that cannot be read (cut short by a kill, not JSON, not a record of
    the right shape) are skipped with a warning naming ``file:line`` and the
    problem; a file that is not a tebench results file at all, or was written
    by a newer schema, is refused with SchemaError. OSError when it cannot be read. ``without``: fields a
    case record is held without where its line holds them (:func:`parse_record`): for a reader that only checks
    and judges, which then writes such a record by its line or reads the line again.
    """
    with collector_off():  # the records stay and hold no cycles: a collection would only walk them
        return _read(path, without)


def _read(path: str | Path, without: tuple[str, ...] = ()) -> Run:
    file = results_path(path)
    if not file.exists():
        raise FileNotFoundError(f"{path}: no results file ({file} does not exist or is not a file)")
    run = Run(path=str(file))
    problems: list[str] = []
    owners: dict[tuple[Any, Any], tuple[str | None, str]] = {}
    described: dict[tuple[str | None, str], tuple[Case, str]] = {}  # (run id, case id) -> its first description
    seen_record = False
    cases: dict[str, tuple[Case, bool]] = {}
    # Bounded: a FIFO, a device or a file past the size limit is refused (InputError, exit 2), and a
    # line past the line limit is skipped without being held in memory.
    for lineno, raw in bounded.iter_lines(file):
        where = f"{file}:{lineno}"
        if raw is None:
            problems.append(f"{where}: a line longer than {bounded.RESULTS_LINE_MAX_BYTES >> 20} MiB, skipped unread")
            continue
        if lineno == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]  # a file an editor saved with a byte-order mark: UTF-8 all the same
        if not raw.strip():
            continue
        try:
            record = loads(raw)
        except RecordError as exc:
            problems.append(f"{where}: {exc}")
            continue
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            # A process killed mid-write leaves a partial line; the case it
            # belonged to simply has no record and is re-run by --resume.
            problems.append(f"{where}: {_unreadable(exc, raw)}")
            continue
        if not isinstance(record, dict) or record.get("schema") != SCHEMA:
            if not seen_record:  # the file is not tebench's: say what it is, and what tebench reads
                what = (f"schema={short_repr(record.get('schema'), 80)}" if isinstance(record, dict)
                        else f"a JSON {type(record).__name__}")
                # An HTML page or a log: the first line that parses as JSON is rarely where the trouble starts.
                before = (f"; nor is any of the {len(problems):,} non-empty line(s) before it (first: {problems[0]})"
                          if problems else "")
                raise SchemaError(f"{where}: not a tebench results record ({what}){before}; {READABLE}")
            what = f"[schema] = {record.get('schema')!r}" if isinstance(record, dict) else f"a JSON {type(record).__name__}"
            problems.append(f"{where}: not a tebench results record ({what})")
            continue
        version = record.get("schema_version")
        if seen_record and (not isinstance(version, int) or isinstance(version, bool)):
            # Damage on one line after a good one: that line is skipped, the file stays readable.
            problems.append(f"{where}: [schema_version] = {version!r}: must be an integer")
            continue
        check_version(record, where)  # a newer schema refuses the whole file
        seen_record = True
        try:
            _restore_non_finite(record)
            parsed = parse_record(record, text=may_hold_surrogate(raw), line=raw, cases=cases, without=without)
        except RecordError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if isinstance(parsed, RunHeader):
            run.headers.append(parsed)
            run.header_lines.append(lineno)
            continue
        note = _replaced_by_another_run(parsed, run, owners, where)
        if note:
            run.replaced.append(note)
        first = described.setdefault((owners[(parsed.case_id, parsed.round_no)][0], parsed.case_id),
                                     (parsed.case, where))
        if first[0] is not parsed.case and first[0] != parsed.case:
            run.mixed.append(f"{where}: case {parsed.case_id} round {parsed.round_no} ran other settings than "
                             f"its record at {first[1]}")
        run.cases.append(parsed)
        run.case_lines.append(lineno)
    run.skipped_lines = len(problems)
    run.problems = problems
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        warnings.warn(f"{file}: skipped {len(problems)} unreadable line(s): {shown}", stacklevel=2)
    if run.replaced:
        # One example: a file that appends re-runs on purpose (reports/h200-nightly) should not fill a screen.
        shown = run.replaced[0] + (f"; and {len(run.replaced) - 1} more" if len(run.replaced) > 1 else "")
        warnings.warn(f"{file}: holds {len(run.run_ids)} runs; {len(run.replaced)} case record(s) of one run "
                      f"replaced by another's (the last counts; split the file if that is wrong): {shown}",
                      stacklevel=2)
    if run.mixed:
        shown = run.mixed[0] + (f"; and {len(run.mixed) - 1} more" if len(run.mixed) > 1 else "")
        warnings.warn(f"{file}: {len(run.mixed)} case record(s) ran other settings than an earlier record of the same "
                      f"case and run, and would be pooled with it (a file edited, or runs joined by hand): {shown}",
                      stacklevel=2)
    if not run.headers:
        why = f" ({len(problems)} line(s) unreadable, first {problems[0]})" if problems else ""
        raise SchemaError(f"{file}: no header record{why}; not a tebench results file; {READABLE}")
    untimed = [h for h in run.headers if h.created and not _is_instant(h.created)]
    if untimed:
        warnings.warn(f"{file}: run {untimed[0].run_id}'s header has created = {short_repr(untimed[0].created)}, "
                      "not an ISO 8601 time as tebench writes it (2026-12-08T00:24:04+0000): history orders such "
                      "a run as untimed, before every timed one"
                      + (f"; and {len(untimed) - 1} more header(s)" if len(untimed) > 1 else ""), stacklevel=2)
    return run


def _is_instant(text: str) -> bool:
    """Whether ``text`` reads as an ISO 8601 time, which history orders runs by (one without an offset as UTC)."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True
