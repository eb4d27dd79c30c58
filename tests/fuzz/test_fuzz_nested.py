"""Nested damage (tests/fuzz/damage.py): one wrong value anywhere inside a record of a real results file.

The rule, from the issue: a damaged value anywhere inside a record, at any
depth and including unpaired surrogates, makes that line skipped with
``file:line``, the field path and the value; a damaged header makes the file
refused (exit 2) naming the same. Never a traceback, and never an exit code
that means "regression". Keys this tebench does not know ride along unchanged.

Every variant (a few thousand) goes through the readers in-process
(``record.read`` over ``results.read``, the report's loader, and what
``tebench run --strict`` reads: each case's ``problem`` and ``why``), which is
cheap: a reader that refuses the damage is what keeps every command after it
from falling over. The named variants and a deterministic sample of the rest
go through the reading commands of ``tebench.cli.main``, in-process:
``compare`` with the damaged file on either side, ``merge`` and ``history
add``; a few of the named ones and a sparser sample of values a reader may
keep also through ``report`` and ``history report``, which render (about a
second each). One real process proves the exit status end to end: an
exception escaping ``main`` is exit 1, what a CI gate reads as "regression".

What the expected outcome of each variant is, is data: the field tables and
``allowed`` in tests/fuzz/damage.py (see its docstring), and for the named
ones tests/fuzz/nested/expected.json.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tebench import cli
from tebench.schema.version import SchemaError
from tebench.schema.records import CaseResult, RunHeader
from tebench.report import load as report_load

FUZZ = Path(__file__).resolve().parent


def _load_damage():
    # tests/fuzz is not a package (make_corpus.py is a script): load the generator by its path.
    spec = importlib.util.spec_from_file_location("fuzz_damage", FUZZ / "damage.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


damage = _load_damage()
VARIANTS = damage.variants()
NAMED = damage.named_variants()
CORPUS = FUZZ / "nested"
EXPECTED = json.loads((CORPUS / "expected.json").read_text())
CLI_SAMPLE_EVERY = 131
"""Every n-th systematic variant also goes through compare, merge and history add (a prime: it walks across
replacements and fields alike)."""
RENDER_SAMPLE_EVERY = 499
"""Every n-th systematic variant a reader may keep (a null, a huge number, a free field) also goes through report and
history report (about a second each): damage the readers refuse never reaches a render, a kept value does."""


# --- reading one variant -----------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the readers made of one damaged file."""

    kind: str
    """kept | skipped | refused | crashed"""
    message: str
    """The warnings (kept, skipped), the error (refused) or the traceback (crashed)."""
    header: RunHeader | None = None
    cases: list[CaseResult] | None = None
    strict: list[str] | None = None
    """The lines ``tebench run --strict`` prints for the cases it fails on."""


def write(variant: Any, root: Path, twin: bool = True) -> tuple[Path, Path]:
    """The damaged file and (with ``twin``) its undamaged twin, under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    bad, good = root / "damaged.jsonl", root / "good.jsonl"
    bad.write_text(variant.text())
    if twin:
        good.write_text(variant.good_text())
    return bad, good


def crash_site(exc: BaseException) -> str:
    """``file:function`` of the innermost tebench frame of a traceback: where the reader fell over."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/tebench/" in f.filename]
    where = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    short = where.filename.split("/tebench/", 1)[-1]
    return f"{type(exc).__name__} in tebench/{short}:{where.name}: {exc}"


def read(variant: Any, path: Path) -> Outcome:
    """Read ``path`` as the readers do: the report's loader (record.read over results.read) and --strict's view."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            src = report_load.load(path)
            # What `tebench run --strict` lists for the run it has just read (cli.cmd_run), and fails on.
            strict = [f"{r.status:<8} {r.case_id}: {r.why}" for r in src.records if r.problem]
        except SchemaError as exc:
            return Outcome("refused", str(exc))
        except Exception as exc:  # noqa: BLE001 - any other exception is the failure under test
            return Outcome("crashed", crash_site(exc))
    text = " | ".join(str(w.message) for w in caught)
    where = f"{path}:{variant.line}: "
    return Outcome("skipped" if where in text else "kept", text, src.header, src.records, strict)


def _same_stored(a: Any, b: Any) -> bool:
    """Equal as stored values: NaN equals NaN, 1 equals 1.0."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        nan = [isinstance(x, float) and math.isnan(x) for x in (a, b)]
        return all(nan) if any(nan) else float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_stored(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_stored(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _names_value(variant: Any, message: str) -> bool:
    """The message shows the value, or names a path below the damaged one (it found the bad item inside)."""
    if variant.value is None:
        return True  # a missing or null field: the path says it
    if "case_id" in variant.names and "does not match its case, whose id is" in message:
        return True  # the case's id, which the message shows, is made of the value
    shown = repr(variant.value)
    return shown[:30] in message or f"{variant.field}[" in message or f"{variant.field}." in message


def problems(variant: Any, outcome: Outcome, path: Path) -> list[str]:
    """What is wrong with ``outcome`` for ``variant``; empty when it is right."""
    if outcome.kind == "crashed":
        return [f"traceback: {outcome.message}"]
    out = []
    if outcome.kind not in variant.allowed:
        said = outcome.message[:300] or "no warning"
        out.append(f"{outcome.kind}, expected {' or '.join(sorted(variant.allowed))}: {said}")
        return out
    if outcome.kind in ("skipped", "refused"):
        # Only the part about this line: a skipped-lines warning lists every line it skipped.
        where = f"{path}:{variant.line}"
        if where not in outcome.message:
            out.append(f"{outcome.kind} without naming {where}: {outcome.message[:300]}")
        about = outcome.message[outcome.message.find(where):] if where in outcome.message else outcome.message
        if not any(f in about for f in variant.fragments()):
            out.append(f"{outcome.kind} without naming the field {' or '.join(variant.fragments())}: {about[:300]}")
        elif not _names_value(variant, about):
            out.append(f"{outcome.kind} without showing the value {variant.value!r:.60}: {about[:300]}")
    else:
        out += _rides_along(variant, outcome)
    return out


def _rides_along(variant: Any, outcome: Outcome) -> list[str]:
    """A kept value reads back as it was written (keys this tebench does not know ride along unchanged)."""
    if variant.path[0] == "parity":
        return []  # judged again from the loss curves: the stored verdict is replaced on purpose
    if variant.header:
        stored = outcome.header.to_dict()
    else:
        companion = json.loads(variant.lines[2]).get("case_id")
        mine = [r for r in outcome.cases if r.case_id != companion]
        if len(mine) != 1:
            return [f"kept, but {len(mine)} records besides the companion were read"]
        stored = mine[0].to_dict()
    got = damage.get(stored, variant.path, default=None)
    if variant.value is None and got is None:
        return []  # null and absent read alike for an optional part
    if variant.path[0] == "case" and variant.replacement == "null":
        return []  # the case description is completed with its defaults
    if not _same_stored(got, variant.value):
        return [f"kept, but {variant.field} reads back as {got!r:.80} instead of {variant.value!r:.80}"]
    return []


# --- every variant through the readers -------------------------------------------------------------


def _by_field(variants: tuple) -> dict[str, list]:
    groups: dict[str, list] = {}
    for v in variants:
        groups.setdefault(f"{v.fixture}:{v.line}:{v.field}", []).append(v)
    return groups


FIELDS = _by_field(VARIANTS)


def test_corpus_covers_every_field_and_replacement():
    """The walk reaches deep fields of case records and headers, and tries every kind of wrong value."""
    assert len(VARIANTS) >= 2000
    fields = {v.field for v in VARIANTS}
    for deep in ("gpu_busy.busy_fraction", "phases.build_s", "launch.preload_s", "validation.metric",
                 "fp8_state.flags", "env.gpus[0].index", "env.gpu_clocks", "command[0]", "compile_cache.state",
                 "matrix.name", "timing.samples_ms[0]", "distributed.per_rank[0].tokens_per_s"):
        assert deep in fields, deep
    # Not only a list's first item: a reader that checks samples_ms[0] alone is caught by the last.
    assert any(f.startswith("timing.samples_ms[") and f != "timing.samples_ms[0]" for f in fields)
    assert {v.replacement for v in VARIANTS} >= {"string", "number", "null", "list", "object", "bool", "surrogate",
                                                 "nan", "inf", "huge_float", "huge_int", "negative", "empty_list"}
    assert len({v.name for v in VARIANTS}) == len(VARIANTS)


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_damaged_value_is_skipped_or_refused_naming_file_line_field_and_value(field, tmp_path):
    """Each wrong value of one field, read as the report, compare, merge, history and --strict read it."""
    failures = []
    for i, v in enumerate(FIELDS[field]):
        bad, _ = write(v, tmp_path / str(i), twin=False)
        failures += [f"{v.replacement} ({v.value!r:.40}): {p}" for p in problems(v, read(v, bad), bad)]
    assert not failures, f"{field}:\n  " + "\n  ".join(failures)


@pytest.mark.parametrize("variant", NAMED, ids=lambda v: v.name)
def test_named_damage_from_the_issue(variant, tmp_path):
    """The failures the issue lists, one by one (also written to tests/fuzz/nested/)."""
    bad, _ = write(variant, tmp_path, twin=False)
    assert not (found := problems(variant, read(variant, bad), bad)), "\n".join(found)


def test_committed_nested_corpus_matches_the_generator():
    """tests/fuzz/nested/ is what make_corpus.py writes now (regenerate it after changing damage.py)."""
    assert sorted(EXPECTED) == sorted(f"{v.name}.jsonl" for v in NAMED)
    for v in NAMED:
        assert (CORPUS / f"{v.name}.jsonl").read_text() == v.text(), v.name
        assert EXPECTED[f"{v.name}.jsonl"]["outcome"] == sorted(v.allowed)


# --- samples through every reading command ---------------------------------------------------------

CLI_VARIANTS = list(NAMED) + list(VARIANTS[::CLI_SAMPLE_EVERY])
RENDER_NAMED = ("gpu_busy_busy_fraction_string", "fp8_state_flags_number", "gpu_without_index", "cpu_surrogate",
                "ride_along_nested_key")
"""A case part, the FP8 state, a GPU of the header, a surrogate, and a key riding along into the report."""
KEEPABLE = [v for v in VARIANTS if "kept" in v.allowed]
RENDER_VARIANTS = [v for v in NAMED if v.name in RENDER_NAMED] + KEEPABLE[::RENDER_SAMPLE_EVERY]


def _main_in_process(argv: list[str]) -> tuple[int | None, str, str | None]:
    """``cli.main(argv)`` in-process: (exit code, stderr, the crash site when an exception escaped)."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException as exc:  # noqa: BLE001 - an escaping exception is the failure under test
            return None, err.getvalue(), crash_site(exc)
    return code, err.getvalue(), None


def run_commands(variant: Any, tmp_path: Path, commands: list[list[str]]) -> None:
    """Run each command on the variant's files ({bad}, {good}, {out} in argv); assert the rules of the module doc.

    Exit codes: 0 or 2, never a traceback; where the damaged line is skipped
    or the file refused, the warning or error names ``file:line``. ``compare``
    exits 1 for a regression: allowed only for a value that may be kept and
    was (see test_compare_never_calls_damage_a_regression).
    """
    bad, good = write(variant, tmp_path / "in")
    outcome = read(variant, bad)
    rejected = outcome.kind in ("skipped", "refused")
    out = tmp_path / "out"
    out.mkdir()  # compare --out writes a file, into a directory that must exist
    failures = []
    for template in commands:
        argv = [a.format(bad=bad, good=good, out=out) for a in template]
        code, err, crash = _main_in_process(argv)
        name = " ".join(argv[:2] if argv[0] == "history" else argv[:1])
        if argv[0] == "compare":
            name += " (damaged base)" if argv[1] == str(bad) else " (damaged head)"
        if crash is not None or "Traceback" in err:
            failures.append(f"{name}: traceback: {crash or err[-300:]}")
            continue
        if argv[:2] == ["history", "report"] and not (out / "history.db").exists():
            ok = code == 2  # nothing was added: "no such history database"
        elif argv[0] == "compare" and outcome.kind == "kept" and "kept" in variant.allowed:
            ok = code in (0, 1, 2)  # a value that may be kept is data: judging it is compare's job
        else:
            ok = code in (0, 2)
        if not ok:
            failures.append(f"{name}: exit {code} ({'regression' if code == 1 else 'unexpected'}): {err[-300:]}")
        elif rejected and argv[:2] != ["history", "report"] and f"{bad}:{variant.line}" not in err:
            failures.append(f"{name}: exit {code} without naming {bad}:{variant.line}: {err[-300:]}")
    merged = out / "merged" / "results.jsonl"
    if variant.name.startswith("ride_along_") and merged.is_file():
        lines = [json.loads(line) for line in merged.read_text().splitlines()]
        mine = json.loads(variant.lines[variant.line - 1]).get("case_id")
        target = lines[0] if variant.header else next((r for r in lines[1:] if r.get("case_id") == mine), {})
        if not _same_stored(damage.get(target, variant.path, default=None), variant.value):
            failures.append(f"merge: {variant.field} not written back unchanged")
    assert not failures, f"{variant.name} (reader: {outcome.kind}):\n  " + "\n  ".join(failures)


@pytest.mark.parametrize("variant", CLI_VARIANTS, ids=lambda v: v.name)
def test_compare_never_calls_damage_a_regression(variant, tmp_path):
    """compare (the damaged file as base, then as head, against its undamaged twin), merge and history add.

    ``compare`` exits 1 for "regressed" (or "status-changed", "invalid"): the
    damage must never produce it. When the damaged line is skipped, its case
    is in one side only: ``compare`` calls that ``missing-in-head`` (damaged
    head) or ``new-in-head`` (damaged base), *unmeasured* verdicts that do not
    fail the gate (only ``--fail-on-missing`` makes a missing case fail; it is
    not given here), and the companion case is identical on both sides
    (``unchanged``, or ``inconclusive`` with one round): exit 0. Should no case
    be left in common, compare says so with exit 2. A refused header is exit 2
    naming it. A value the readers keep is data like any other: if it changes
    a measurement (a 1e308-byte memory peak), calling that a regression is
    compare's job, so exit 1 is allowed only for a value that may be kept and
    was. Damage a reader wrongly keeps (a negative step time, which compare
    calls ``invalid``) must not exit 1 either.
    """
    run_commands(variant, tmp_path, [
        ["compare", "{bad}", "{good}", "--format", "json", "--out", "{out}/base-damaged.json"],
        ["compare", "{good}", "{bad}", "--format", "json", "--out", "{out}/head-damaged.json"],
        ["merge", "{bad}", "--out", "{out}/merged", "--no-report"],
        ["history", "add", "{bad}", "--db", "{out}/history.db"],
    ])


@pytest.mark.parametrize("variant", RENDER_VARIANTS, ids=lambda v: v.name)
def test_report_and_history_report_render_or_refuse(variant, tmp_path, monkeypatch):
    """report and history report (after history add): what writes the damage out as HTML, Markdown, SQLite.

    Each render costs about a second, so fewer variants come here: the places
    the issue saw a render fall over, a key riding along, and a sparse sample
    of the values a reader may keep (refused damage never reaches a render).
    """
    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", "1")  # charts drawn here: a chart's traceback is seen here
    run_commands(variant, tmp_path, [
        ["report", "{bad}", "--out", "{out}/report"],
        ["history", "add", "{bad}", "--db", "{out}/history.db"],
        ["history", "report", "--db", "{out}/history.db", "--out", "{out}/history"],
    ])


def test_real_cli_compare_of_damaged_gpu_busy_is_not_a_regression(tebench_cli, tmp_path):
    """The issue's exit 1, end to end: an exception escaping ``main`` ends the process with status 1, which a CI
    gate reads as "regression". In a real process the damaged side must give 0 or 2, and no traceback."""
    variant = next(v for v in NAMED if v.name == "gpu_busy_busy_fraction_string")
    bad, good = write(variant, tmp_path / "in")
    proc = tebench_cli("compare", str(good), str(bad), "--format", "json", "--out", str(tmp_path / "c.json"),
                       timeout=300)
    assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr, \
        f"exit {proc.returncode}; stderr ends: {proc.stderr[-600:]}"
    assert f"{bad}:{variant.line}" in proc.stderr, proc.stderr[-2000:]
