"""Nested damage: real results files with one value, anywhere inside one record, replaced by a wrong one.

The readers check the outside of a record (is ``gpu_busy`` an object?) more
than its inside (is ``gpu_busy.busy_fraction`` a number?). This module takes
the real records of ``tests/fixtures/*.jsonl``, walks every value of the
header and of the case records (dict keys and list items, at every depth),
and for each one builds variants of the file in which that single value is
replaced: by a string, a number, null, a list, an object, a bool, a lone
surrogate (``"\\ud800"``, written as the JSON escape), and where a number
belongs by NaN, infinity, 1e308, 2**70 and a negative number; a non-empty
list also by an empty one.

What each variant must do is data, not code in the test: :func:`case_fields`
and :func:`header_fields` say what each field holds, and :func:`allowed`
turns a field's kind and a replacement into the outcomes a careful operator
expects:

* a case line with a damaged value is ``skipped``, with a warning naming
  ``file:line``, the field path (the deepest one: ``command[1]``, not
  ``command``) and the value; the rest of the file is read;
* a header line with a damaged value makes the file ``refused`` (exit 2),
  naming ``file:1``, the field path and the value: a file without a readable
  header is not a results file;
* a value that fits its field is ``kept``, and reads back unchanged.

A field has a kind when tebench declares it (the dataclasses of
``tebench.schema.records``, ``tebench.schema.environment.Environment`` and ``GPU``, ``Case``,
``Settings`` and ``FP8Options``) or a reader uses it (the phases, the FP8
state the charts draw, the ranks' tokens/s, the compile cache's state, the
GPU clocks). Any other field (``setup``, a device's ``assigned``, the matrix
as resolved, keys a newer tebench added) is free: whatever it holds may ride
along unchanged or be refused like damage; a traceback is never right. An
unpaired surrogate is damage anywhere, free fields included: it cannot be
written to HTML, Markdown or SQLite.

The variants are built in memory (deterministically, from the fixtures): a
few thousand, too many to commit. ``make_corpus.py`` writes the named ones
(:func:`named_variants`, the failures reported in the issue) to ``nested/``
with ``nested/expected.json``, as representative files to read by eye or to
feed other tools.
"""

from __future__ import annotations

import json
import math
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
FIXTURE_NAMES = ("cpu-smoke", "h200-crossover", "h200x2-distributed")
SURROGATE = "\ud800"
"""An unpaired UTF-16 surrogate: valid as a JSON escape, not encodable as UTF-8 (HTML, Markdown, SQLite)."""

Path_ = tuple[Any, ...]
"""A path into a record: dict keys (str) and list indexes (int)."""


# --- what each field holds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """What one field holds, as far as readers rely on it.

    ``types``: the JSON types it may hold (``str``, ``int``, ``number`` (int or
    float), ``bool``, ``list``, ``dict``); ``free`` for a field no reader
    interprets. ``null``: whether null is fine (``ok``), damage (``bad``) or
    either (``unsure``). ``soft_min``: below it a value is suspect but not
    clearly damage (case settings are read without their limits).
    """

    types: tuple[str, ...]
    null: str = "ok"
    min: float | None = None
    max: float | None = None
    soft_min: float | None = None
    finite: bool = True
    choices: tuple[Any, ...] | None = None
    empty: str = "ok"
    """Whether an empty list or object is fine (``ok``), damage (``bad``) or either (``unsure``)."""
    ident: bool = False
    """A non-empty id without control characters (case ids key every reader's tables)."""
    required: tuple[str, ...] = ()
    """Keys an object must have."""
    closed: bool = False
    """An object with a key outside ``known`` is damage (the case description is rebuilt from its keys)."""
    known: tuple[str, ...] = ()
    items: "Kind | None" = None
    """The kind of a list's items or of a map's values."""
    rejudged: bool = False
    """Readers recompute this field (loss parity): a damaged stored value may be replaced instead of refused."""

    @property
    def free(self) -> bool:
        return self.types == ("free",)


def _k(*types: str, **kw: Any) -> Kind:
    """A kind holding one of ``types``."""
    return Kind(types, **kw)


FREE = _k("free")
STR = _k("str")
"""A string, or null."""
TEXT = _k("str", null="bad")
"""A string, never null."""
BOOL = _k("bool")
COUNT = _k("int", min=0)
"""An integer >= 0, or null."""
SECONDS = _k("number", min=0)
"""A finite number >= 0 (seconds, bytes, rates), or null."""
NUMBER = _k("number")


def LIST(items: Kind, **kw: Any) -> Kind:  # noqa: N802 - reads like the constants beside it
    """An array whose items are ``items``."""
    return _k("list", items=items, **kw)


def MAP(items: Kind, **kw: Any) -> Kind:  # noqa: N802
    """An object of any keys whose values are ``items`` (its keys are ``*`` in a field pattern)."""
    return _k("dict", items=items, **kw)


def OBJECT(**kw: Any) -> Kind:  # noqa: N802
    """An object whose keys have kinds of their own in the table."""
    return _k("dict", **kw)


def ENUM(*choices: str, null: str = "ok") -> Kind:  # noqa: N802
    """One of some names (a registry's keys: readers look the value up)."""
    return _k("str", choices=choices, null=null)


@lru_cache(maxsize=1)
def _registries() -> dict[str, tuple[str, ...]]:
    """The names readers look values up by: modes, recipes, workloads, statuses (from tebench's registries)."""
    from tebench.schema.vocabulary import PARALLEL
    from tebench.plan.modes import MODES
    from tebench.plan.recipes import RECIPES
    from tebench.schema.vocabulary import AMAX_ALGOS, FORMATS
    from tebench.schema.version import STATUSES
    from tebench.workloads import SPECS

    return {"modes": tuple(MODES), "recipes": tuple(RECIPES), "formats": FORMATS, "algos": AMAX_ALGOS,
            "workloads": tuple(SPECS), "parallel": PARALLEL, "statuses": STATUSES}


def _settings_fields() -> dict[str, Kind]:
    """``case.settings.*`` from the Settings dataclass: read back with type checks and without limits."""
    import dataclasses
    import typing

    from tebench.schema.settings import Settings

    hints = typing.get_type_hints(Settings)
    out: dict[str, Kind] = {}
    for f in dataclasses.fields(Settings):
        want = hints[f.name]
        lo = f.metadata.get("min")
        if want is bool:
            out[f.name] = _k("bool", null="bad")
        elif want is int:
            out[f.name] = _k("int", null="bad", soft_min=lo)
        elif want is float:
            out[f.name] = _k("number", null="bad", soft_min=lo)
        else:
            out[f.name] = _k("str", null="bad")
    return out


@lru_cache(maxsize=1)
def case_fields() -> dict[str, Kind]:
    """Field path pattern -> kind, for a case record. ``[]`` is any list item, ``*`` any key of a map."""
    reg = _registries()
    settings = _settings_fields()
    parity_number = _k("number", finite=False, rejudged=True)
    fields = {
        "schema": ENUM("tebench.results", null="bad"),
        "schema_version": _k("int", null="bad"),
        "type": ENUM("case", null="bad"),
        "run_id": STR,
        "case_id": _k("str", null="bad", ident=True),
        "round": COUNT,
        "case": OBJECT(null="bad", required=("workload", "size", "mode", "dims")),
        # A user's plugin workload has any name: a name this tebench does not know is not damage.
        "case.workload": _k("str", null="bad", ident=True),
        "case.size": _k("str", null="bad", ident=True),
        "case.mode": ENUM(*reg["modes"], null="bad"),
        # Closed to numbers, not to names: a newer tebench's size may have a dimension this one does not know.
        "case.dims": MAP(_k("int", null="bad", min=1), null="bad", empty="bad", closed=False,
                         known=("vocab", "d_model", "heads", "layers", "ffn", "seq", "batch", "hidden", "blocks",
                                "module", "tokens", "kv_heads")),
        "case.dims.module": TEXT,
        "case.dims.*": _k("int", null="bad", min=1),
        "case.fp8": OBJECT(required=("recipe",), closed=True,
                           known=("recipe", "format", "amax_history_len", "amax_compute_algo", "calibration_steps")),
        "case.fp8.recipe": ENUM(*reg["recipes"], null="bad"),
        "case.fp8.format": ENUM(*reg["formats"]),
        "case.fp8.amax_history_len": _k("int", min=1),
        "case.fp8.amax_compute_algo": ENUM(*reg["algos"]),
        "case.fp8.calibration_steps": COUNT,
        "case.graphs": _k("bool", null="unsure"),
        "case.fp8_weights": _k("bool", null="unsure"),
        "case.parallel": ENUM(*reg["parallel"], null="unsure"),
        "case.nproc": _k("int", min=1, null="unsure"),
        "case.settings": OBJECT(null="bad", closed=True, known=tuple(settings)),
        **{f"case.settings.{name}": kind for name, kind in settings.items()},
        "status": ENUM(*reg["statuses"], null="bad"),
        "reason": STR,
        "device": OBJECT(),
        "device.type": STR,
        "device.name": STR,
        "device.uuid": STR,
        "started": STR,
        "duration_s": SECONDS,
        "log": STR,
        "memory": OBJECT(),
        "memory.kind": STR,
        "memory.peak_allocated_bytes": SECONDS,
        "memory.peak_reserved_bytes": SECONDS,
        "memory.peak_rss_bytes": SECONDS,
        "memory.param_count": COUNT,
        "loss": OBJECT(required=("per_step",)),
        # A diverged curve legitimately holds NaN or inf; an empty one cannot be judged, but is not damage.
        "loss.per_step": LIST(_k("number", null="bad", finite=False), null="bad", empty="unsure"),
        "loss.per_step[]": _k("number", null="bad", finite=False),
        "loss.warmup_steps": COUNT,
        "loss.first": _k("number", finite=False),
        "loss.final": _k("number", finite=False),
        "validation": OBJECT(),
        "validation.metric": STR,
        # The metric's value (the key validation.metric names) is compared with the reference's (parity).
        "validation.greedy_accuracy": _k("number", min=0, max=1),
        "validation.heldout_mse": SECONDS,
        "validation.kind": STR,
        "validation.count": _k("int", min=1),
        "gpu_busy": OBJECT(),
        "gpu_busy.busy_fraction": _k("number", min=0),
        "gpu_busy.kernel_ms_per_step": SECONDS,
        "gpu_busy.method": STR,
        "fp8_state": OBJECT(required=("steps", "layers")),
        # Steps and each quantizer's series are drawn against each other: an empty one no longer matches.
        "fp8_state.steps": LIST(COUNT, null="bad", empty="unsure"),
        "fp8_state.steps[]": _k("int", min=0, null="bad"),
        "fp8_state.layers": MAP(MAP(OBJECT(required=("scale", "amax"))), null="bad"),
        "fp8_state.layers.*": MAP(OBJECT(required=("scale", "amax")), null="bad"),
        "fp8_state.layers.*.*": OBJECT(null="bad", required=("scale", "amax")),
        # A non-finite scale is what the FP8 flags report (overflow): not damage.
        "fp8_state.layers.*.*.scale": LIST(_k("number", finite=False, null="bad"), null="bad", empty="unsure"),
        "fp8_state.layers.*.*.scale[]": _k("number", finite=False, null="bad"),
        "fp8_state.layers.*.*.amax": LIST(_k("number", finite=False, null="bad"), null="bad", empty="unsure"),
        "fp8_state.layers.*.*.amax[]": _k("number", finite=False, null="bad"),
        "fp8_state.flags": LIST(TEXT),
        "fp8_state.flags[]": TEXT,
        "setup": OBJECT(),
        "phases": MAP(SECONDS),
        "phases.*": SECONDS,
        # The multi-GPU table reads the ranks' tokens/s, the aggregate and whether the replicas stayed in sync.
        "distributed": OBJECT(),
        "distributed.per_rank": LIST(OBJECT(null="bad", required=("tokens_per_s",))),
        "distributed.per_rank[]": OBJECT(null="bad", required=("tokens_per_s",)),
        "distributed.per_rank[].tokens_per_s": _k("number", min=0, null="bad"),
        "distributed.aggregate_tokens_per_s": SECONDS,
        "distributed.replicas_in_sync": BOOL,
        "warmup": OBJECT(),
        "warmup.rule": STR,
        "warmup.steps": COUNT,
        "warmup.settled": BOOL,
        "warmup.floor": COUNT,
        "warmup.ceiling": COUNT,
        "launch": OBJECT(),
        "launch.method": ENUM("prestarted", "cold"),
        "launch.preload_s": SECONDS,
        "launch.waited_s": SECONDS,
        "launch.hidden_s": SECONDS,
        "launch.paused_s": SECONDS,
        "launch.after_previous_s": SECONDS,
        # Parity's frozen-layer check compares the count of unchanged tensors with the reference's.
        "updates": OBJECT(),
        "updates.unchanged": COUNT,
        "updates.unchanged_names": LIST(TEXT),
        "updates.unchanged_names[]": TEXT,
        "timing": OBJECT(required=("samples_ms",)),
        "timing.samples_ms": LIST(_k("number", min=0, null="bad"), null="bad", empty="bad"),
        "timing.samples_ms[]": _k("number", min=0, null="bad"),
        "timing.timer": STR,
        "timing.wall_ms_per_step": SECONDS,
        "timing.stats": MAP(NUMBER),
        "timing.stats.n": COUNT,
        "timing.stats.*": NUMBER,
        "throughput": OBJECT(),
        "throughput.tokens_per_step": SECONDS,
        "throughput.tokens_per_s": SECONDS,
        "throughput.flops_per_step": SECONDS,
        "throughput.tflops": SECONDS,
        "throughput.mfu": SECONDS,
        "throughput.mfu_basis": STR,
        "parity": OBJECT(rejudged=True),
        "parity.verdict": _k("str", rejudged=True),
        "parity.reason": _k("str", rejudged=True),
        "parity.reference_mode": _k("str", rejudged=True),
        "parity.direction": _k("str", rejudged=True),
        "parity.*": parity_number,
        "shard_run_id": STR,
    }
    return fields


@lru_cache(maxsize=1)
def header_fields() -> dict[str, Kind]:
    """Field path pattern -> kind, for a header record."""
    support = OBJECT(required=("ok",), null="bad")
    fields = {
        "schema": ENUM("tebench.results", null="bad"),
        "schema_version": _k("int", null="bad"),
        "type": ENUM("header", null="bad"),
        "run_id": STR,
        "created": STR,
        "resumed": BOOL,
        "command": LIST(TEXT),
        "command[]": TEXT,
        "cwd": STR,
        # Reports and history title a run by its matrix's name: a matrix without one is damage.
        "matrix": OBJECT(required=("name",)),
        "matrix.name": TEXT,
        "matrix.source": STR,
        "matrix.sha256": STR,
        "matrix.text_sha256": STR,
        # The matrix as it was resolved: shown, never interpreted by a reader (merge compares its sha256).
        "matrix.data.**": FREE,
        "rounds": _k("int", min=1),
        "shard": LIST(_k("int", min=1, null="bad")),
        "shard[]": _k("int", min=1, null="bad"),
        "case_ids": LIST(_k("str", null="bad", ident=True)),
        "case_ids[]": _k("str", null="bad", ident=True),
        "devices": LIST(TEXT),
        "devices[]": TEXT,
        "excluded": LIST(OBJECT(null="bad", required=("rule", "cases"))),
        "excluded[]": OBJECT(null="bad", required=("rule", "cases")),
        "excluded[].rule": OBJECT(null="bad"),
        "excluded[].reason": STR,
        "excluded[].cases": _k("int", min=0, null="bad"),
        "launch": ENUM("prestarted", "cold"),
        "prestart_depth": _k("int", min=1),
        "prestart_pause": BOOL,
        "compile_cache": OBJECT(),
        "compile_cache.dir": STR,
        "compile_cache.state": ENUM("cold", "warm", "off"),
        # Environment's one field without a default: what every gate and view keys on.
        "env": OBJECT(required=("device_type",)),
        "env.device_type": ENUM("cpu", "cuda", null="bad"),
        # The environment's lists, tables and support flags are never null (the probe always fills them).
        "env.gpus": LIST(OBJECT(null="bad", required=("index", "name", "capability", "memory_bytes")), null="bad"),
        "env.gpus[]": OBJECT(null="bad", required=("index", "name", "capability", "memory_bytes")),
        "env.gpus[].index": _k("int", min=0, null="bad"),
        "env.gpus[].name": TEXT,
        "env.gpus[].capability": LIST(_k("int", min=0, null="bad"), null="bad", empty="bad"),
        "env.gpus[].capability[]": _k("int", min=0, null="bad"),
        "env.gpus[].memory_bytes": _k("int", min=0, null="bad"),
        "env.gpus[].multiprocessors": COUNT,
        "env.torch": STR,
        "env.cuda": STR,
        "env.cudnn": STR,
        "env.driver": STR,
        "env.te": STR,
        "env.te_error": STR,
        "env.te_recipes": LIST(TEXT, null="bad"),
        "env.te_recipes[]": TEXT,
        "env.te_api": LIST(TEXT, null="bad"),
        "env.te_api[]": TEXT,
        **{f"env.{name}": support for name in ("fp8", "fp8_block", "mxfp8", "nvfp4", "compile", "fsdp2")},
        **{f"env.{name}.ok": _k("bool", null="bad") for name in ("fp8", "fp8_block", "mxfp8", "nvfp4", "compile",
                                                               "fsdp2")},
        **{f"env.{name}.reason": STR for name in ("fp8", "fp8_block", "mxfp8", "nvfp4", "compile", "fsdp2")},
        "env.bf16": BOOL,
        "env.python": STR,
        "env.platform": STR,
        "env.cpu": STR,
        "env.cpu_count": COUNT,
        "env.hostname": STR,
        "env.gpu_clocks": MAP(MAP(STR), null="bad"),
        "env.gpu_clocks.*": MAP(STR, null="bad"),
        "env.gpu_clocks.*.*": STR,
        "env.env_vars": MAP(TEXT, null="bad"),
        "env.env_vars.*": TEXT,
        "env.tebench": STR,
        "env.git_commit": STR,
        "env.git_dirty": BOOL,
        # PeakRates as the probe writes it: MFU divides by bf16, the report names match and source.
        "env.peak_tflops": OBJECT(required=("match", "bf16", "fp32", "source")),
        "env.peak_tflops.match": TEXT,
        "env.peak_tflops.source": TEXT,
        "env.peak_tflops.bf16": _k("number", min=0, null="bad"),
        "env.peak_tflops.fp32": _k("number", min=0, null="bad"),
        "env.peak_tflops.*": SECONDS,
        "env.time": STR,
        "ab": OBJECT(),
        "ab.id": STR,
        "ab.env": MAP(TEXT),
    }
    return fields


def _parse(pattern: str) -> tuple[str, ...]:
    """``"env.gpus[].index"`` -> ``("env", "gpus", "[]", "index")``."""
    out: list[str] = []
    for part in pattern.split("."):
        name, *items = part.split("[]")
        if name:
            out.append(name)
        out.extend("[]" for _ in items)
    return tuple(out)


@lru_cache(maxsize=2)
def _patterns(record_type: str) -> dict[Any, list[tuple[tuple[str, ...], str, Kind]]]:
    """The field table parsed, by (length, first key) (``**`` patterns under ``"**"``), in table order."""
    table = header_fields() if record_type == "header" else case_fields()
    out: dict[Any, list[tuple[tuple[str, ...], str, Kind]]] = {}
    for pattern, kind in table.items():
        parts = _parse(pattern)
        out.setdefault("**" if parts[-1] == "**" else (len(parts), parts[0]), []).append((parts, pattern, kind))
    return out


def _matches(parts: tuple[str, ...], path: Path_) -> bool:
    """Whether a parsed pattern matches a concrete path."""
    if parts and parts[-1] == "**":
        return len(path) >= len(parts) and _matches(parts[:-1], path[:len(parts) - 1])
    return len(parts) == len(path) and all(
        (p == "[]" and isinstance(x, int)) or (p == "*" and isinstance(x, str)) or p == x
        for p, x in zip(parts, path))


def field_kind(record_type: str, path: Path_) -> tuple[str | None, Kind]:
    """The pattern a path matches (the first in table order) and its kind; (None, FREE) when no reader relies on it.

    ``[]`` matches a list index, ``*`` a key of a map, and ``**`` at the end of a pattern any path below it.
    """
    table = _patterns(record_type)
    for parts, pattern, kind in table.get((len(path), path[0]), []) + table.get("**", []):
        if _matches(parts, path):
            return pattern, kind
    return None, FREE


# --- judging a value against its kind ---------------------------------------------------------------


def has_surrogate(value: Any) -> bool:
    """Whether any text inside ``value`` (keys included) holds an unpaired surrogate."""
    if isinstance(value, str):
        return any(unicodedata.category(ch) == "Cs" for ch in value)
    if isinstance(value, list):
        return any(has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(has_surrogate(k) or has_surrogate(v) for k, v in value.items())
    return False


_WORST = {"ok": 0, "unsure": 1, "bad": 2}


def _worst(*verdicts: str) -> str:
    """The worst of some judgements (bad over unsure over ok)."""
    return max(verdicts, key=_WORST.__getitem__, default="ok")


def judge(kind: Kind, value: Any) -> str:
    """``ok``, ``bad`` (damage) or ``unsure`` (a reader may keep it or refuse it): ``value`` in a field of ``kind``."""
    if has_surrogate(value):
        return "bad"
    if kind.free:
        return "unsure"
    if value is None:
        return kind.null
    if isinstance(value, bool):
        return "ok" if "bool" in kind.types else "bad"
    if isinstance(value, (int, float)):
        if not ({"int", "number"} & set(kind.types)):
            return "bad"
        if "number" not in kind.types and not isinstance(value, int):
            return "bad"
        if isinstance(value, float) and not math.isfinite(value):
            return "bad" if kind.finite else "ok"
        if kind.min is not None and value < kind.min:
            return "bad"
        if kind.max is not None and value > kind.max:
            return "bad"
        if kind.soft_min is not None and value < kind.soft_min:
            return "unsure"
        # Finite but absurd: it may overflow a reader's arithmetic or SQLite's 64-bit integers.
        return "unsure" if abs(value) > 2**53 else "ok"
    if isinstance(value, str):
        if "str" not in kind.types:
            return "bad"
        if kind.choices is not None and value not in kind.choices:
            return "bad"
        if kind.ident and (not value or any(unicodedata.category(ch) == "Cc" for ch in value)):
            return "bad"
        return "ok"
    if isinstance(value, list):
        if "list" not in kind.types:
            return "bad"
        if not value:
            return kind.empty
        return _worst(*(judge(kind.items, v) for v in value)) if kind.items else "ok"
    if isinstance(value, dict):
        if "dict" not in kind.types:
            return "bad"
        if any(k not in value for k in kind.required):
            return "bad"
        if not value and kind.empty != "ok":
            return kind.empty
        if kind.closed and any(k not in kind.known for k in value):
            return "bad"
        return _worst(*(judge(kind.items, v) for v in value.values())) if kind.items else "ok"
    return "bad"


# --- variants ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One damaged file: the fixture's header and case records with one value of one line replaced."""

    name: str
    """``fixture:line:path:replacement``, stable across runs (the test id)."""
    fixture: str
    lines: tuple[str, ...]
    """The damaged file, one JSON text per line."""
    good: tuple[str, ...]
    """The same file undamaged (the other side of ``compare``)."""
    line: int
    """1-based number of the damaged line (1: the header)."""
    path: Path_
    replacement: str
    """What replaced the value: string, number, null, list, object, bool, surrogate, nan, inf, huge_float, ..."""
    value: Any
    allowed: frozenset[str]
    """Outcomes that are right: ``kept``, ``skipped`` (the line, with a warning), ``refused`` (the file, exit 2)."""
    names: tuple[str, ...] = ()
    """Fragments of which the warning or error must hold one, beside ``file:line`` (default: the field path)."""
    note: str = ""

    @property
    def field(self) -> str:
        """The field path as messages write it: ``env.gpus[0].index``."""
        return show_path(self.path)

    @property
    def header(self) -> bool:
        """Whether the damaged line is the header."""
        return self.line == 1

    def text(self) -> str:
        """The damaged file's contents."""
        return "".join(line + "\n" for line in self.lines)

    def good_text(self) -> str:
        """The undamaged file's contents."""
        return "".join(line + "\n" for line in self.good)

    def fragments(self) -> tuple[str, ...]:
        """What the warning or error must name, one of them at least."""
        return self.names or (self.field,)


def show_path(path: Path_) -> str:
    """A path as messages write it: keys joined by dots, list indexes in brackets."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def dumps(record: Any) -> str:
    """A line as an operator's tooling writes it: ``json.dumps`` (NaN and Infinity bare, surrogates escaped)."""
    return json.dumps(record)


def _copy(record: Any) -> Any:
    """A deep copy, as a JSON round trip makes it."""
    return json.loads(json.dumps(record))


@lru_cache(maxsize=None)
def records(name: str) -> list[dict[str, Any]]:
    """The fixture's records (header first), with the parts a current tebench writes that the fixture predates.

    The fixtures were recorded before the header held ``excluded``,
    ``launch``, ``prestart_depth``, ``prestart_pause`` and ``compile_cache``,
    and before case records held ``warmup``, ``launch``, ``updates`` and a
    GPU's ``uuid``: values of the shape the runner writes now are added, so
    that those parts are walked too.
    """
    out = [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    header = out[0]
    cuda = header.get("env", {}).get("device_type") == "cuda"
    header.setdefault("excluded", [{"rule": {"mode": "TE-BF16", "graphs": True}, "reason": "not measured",
                                    "cases": 2}])
    header.setdefault("launch", "prestarted" if cuda else "cold")
    header.setdefault("prestart_depth", 2 if cuda else None)
    header.setdefault("prestart_pause", True if cuda else None)
    header.setdefault("compile_cache", {"dir": "/root/.cache/tebench/compile", "state": "warm", "files": 812,
                                        "bytes": 48_213_004, "overridden_by_env": ["TRITON_CACHE_DIR"]})
    for rec in out[1:]:
        if rec.get("status") != "ok":
            continue
        rec.setdefault("warmup", {"rule": "settled", "floor": 2, "ceiling": 6, "rtol": 0.1, "steps": 3,
                                  "settled": True, "step_ms": [812.5, 9.25, 9.1]})
        rec.setdefault("launch", {"method": "prestarted" if cuda else "cold", "preload_s": 3.25, "waited_s": 0.5,
                                  "hidden_s": 3.25, "paused_s": 0.0, "after_previous_s": 0.012})
        rec.setdefault("updates", {"tensors": 12, "unchanged": 0, "unchanged_names": []})
        if rec.get("device", {}).get("type") == "cuda":
            rec["device"].setdefault("uuid", "GPU-5c1f3a52-1d2e-4b7f-9a0e-6b1c2d3e4f50")
    return out


def walk(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) inside ``value``, depth first; of a list its first and last items.

    The items of one list have one shape: damaging the first and the last
    finds a reader that checks only one end, without a variant per step.
    """
    if path:
        yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, path + (k,))
    elif isinstance(value, list):
        for i in sorted({0, len(value) - 1} & set(range(len(value)))):
            yield from walk(value[i], path + (i,))


def _shape(record_type: str, path: Path_, length: dict[Path_, int]) -> tuple[Any, ...]:
    """What makes two paths the same for the corpus: map keys the field table names ``*`` (or ``**``), list
    items by position (first, last). One variant set per shape, in the first record holding it."""
    pattern, _ = field_kind(record_type, path)
    parts = _parse(pattern) if pattern else ()
    below = bool(parts) and parts[-1] == "**"
    out: list[Any] = []
    for i, x in enumerate(path):
        part = "**" if below and i >= len(parts) - 1 else (parts[i] if i < len(parts) else x)
        if isinstance(x, int):
            out.append("first" if x == 0 else ("last" if x == length.get(path[:i], 0) - 1 else "inner"))
        else:
            out.append("*" if part in ("*", "**") else x)
    return (record_type, *out)


FREE_REPLACEMENTS = ("string", "null", "list", "object", "surrogate", "nan", "huge_int")
"""What is tried in a free field: no reader interprets it, so a bool or another number tells nothing a string, NaN
or 2**70 does not (a surrogate is damage there too; NaN and 2**70 are what arithmetic and SQLite trip on)."""


def replacements(original: Any, free: bool = False) -> list[tuple[str, Any]]:
    """The wrong values tried in place of ``original`` (none equal to it); fewer in a ``free`` field."""
    out: list[tuple[str, Any]] = [
        ("string", "damaged"), ("number", 0.5), ("null", None), ("list", [1, "damaged"]),
        ("object", {"damaged": 1}), ("bool", (not original) if isinstance(original, bool) else True),
        ("surrogate", SURROGATE),
    ]
    if isinstance(original, (int, float)) and not isinstance(original, bool):
        out += [("nan", float("nan")), ("inf", float("inf")), ("huge_float", 1e308), ("huge_int", 2**70),
                ("negative", -1 if isinstance(original, int) else -1.5)]
    if isinstance(original, list) and original:
        out.append(("empty_list", []))
    return [(name, v) for name, v in out if not _unchanged(v, original) and (not free or name in FREE_REPLACEMENTS)]


def _unchanged(a: Any, b: Any) -> bool:
    """Whether a replacement is the original value (then it is no damage)."""
    return type(a) is type(b) and json.dumps(a) == json.dumps(b)


_ID_FIELDS = {("case_id",), *(("case", k) for k in ("workload", "size", "mode", "graphs", "fp8_weights", "parallel",
                                                     "nproc", "fp8"))}
"""The fields of a case record its case id is made of (and the id itself)."""


def allowed(record_type: str, path: Path_, value: Any) -> tuple[frozenset[str], tuple[str, ...]]:
    """The right outcomes for ``value`` at ``path``, and the fragments the message must hold (see the module doc)."""
    pattern, kind = field_kind(record_type, path)
    reject = "refused" if record_type == "header" else "skipped"
    if path == ("schema_version",):
        if isinstance(value, int) and not isinstance(value, bool) and not has_surrogate(value):
            # A version this tebench does not read (newer, or older than the oldest it reads): refusing the file,
            # as for any record of that version, is right; so is skipping the one case line.
            return frozenset({"refused", reject}), ("schema",)
        return frozenset({reject}), ("schema_version",)
    if record_type == "case" and path == ("round",) and value is None:
        return frozenset({reject}), ("round",)  # no writer stores a null round; it would read as round 0
    verdict = judge(kind, value)
    names: tuple[str, ...] = ("schema",) if path == ("schema",) else ()
    if verdict == "ok":
        outcomes = {"kept"}
    elif verdict == "bad":
        outcomes = {reject}
    else:
        outcomes = {"kept", reject}
    if record_type == "case" and "kept" in outcomes and (path in _ID_FIELDS or path[:2] == ("case", "fp8")):
        # The case id is built from these: a value that changes it no longer matches the stored case_id, and the
        # line is skipped for that (naming the id).
        outcomes |= {reject}
        names = (show_path(path), "case_id")
    if record_type == "case" and path == ("run_id",) and isinstance(value, str):
        # A run id that names no header of the file: the record is of no run the file holds, and is left out
        # with a warning naming its line and run id (it was read under the header of another run).
        outcomes |= {reject}
        names = ("run_id",)
    if kind.rejudged and record_type == "case":
        # Readers judge loss parity again from the curves: a damaged stored verdict may be replaced, not refused.
        outcomes |= {"kept", reject}
    return frozenset(outcomes), names


def get(record: Any, path: Path_, default: Any = KeyError) -> Any:
    """The value at ``path`` (``default`` when it is not there; KeyError without one)."""
    target = record
    for key in path:
        try:
            target = target[key]
        except (KeyError, IndexError, TypeError):
            if default is KeyError:
                raise KeyError(show_path(path)) from None
            return default
    return target


def _companion(recs: list[dict[str, Any]], damaged: int) -> int:
    """The good case line kept beside a damaged one: its reference mode where there is one (parity is judged)."""
    me = recs[damaged]
    others = [i for i in range(1, len(recs)) if i != damaged and recs[i].get("case_id") != me.get("case_id")]
    same = [i for i in others if recs[i]["case"].get("workload") == me["case"].get("workload")
            and recs[i]["case"].get("size") == me["case"].get("size")]
    for i in same:
        if recs[i]["case"].get("mode") in ("PT-FP32", "PT-AMP"):
            return i
    return (same or others)[0]


def file_lines(recs: list[dict[str, Any]], damaged: int) -> list[int]:
    """Which records make the file of a variant: the header, the damaged case line (line 2) and a companion.

    A damaged header keeps the first case record. Small files keep the corpus
    fast; the companion keeps a case in common for ``compare`` when the
    damaged line is skipped.
    """
    if damaged == 0:
        return [0, 1]
    return [0, damaged, _companion(recs, damaged)]


@lru_cache(maxsize=None)
def _good(fixture: str, index: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The records of the file of a variant damaging record ``index``, and their lines (shared by its variants)."""
    recs = records(fixture)
    order = tuple(file_lines(recs, index))
    return order, tuple(dumps(recs[i]) for i in order)


def _variant(fixture: str, recs: list[dict[str, Any]], index: int, path: Path_, replacement: str, value: Any,
             *, allowed_: frozenset[str] | None = None, names: tuple[str, ...] = (), name: str | None = None,
             edit: Callable[[dict[str, Any]], None] | None = None, note: str = "") -> Variant:
    order, good = _good(fixture, index)
    if edit is not None:
        rec = _copy(recs[index])
        edit(rec)
        text = dumps(rec)
    else:
        # Replaced in place and put back: a copy of each (large) record per variant would cost seconds.
        parent = get(recs[index], path[:-1])
        absent = isinstance(parent, dict) and path[-1] not in parent  # a new key (riding along)
        original = None if absent else parent[path[-1]]
        parent[path[-1]] = value
        try:
            text = dumps(recs[index])
        finally:
            if absent:
                del parent[path[-1]]
            else:
                parent[path[-1]] = original
    lines = list(good)
    lines[order.index(index)] = text
    line = order.index(index) + 1
    record_type = "header" if index == 0 else "case"
    if allowed_ is None:
        allowed_, names = allowed(record_type, path, value)
    return Variant(name or f"{fixture}:{line}:{show_path(path)}:{replacement}", fixture, tuple(lines), good,
                   line, path, replacement, value, allowed_, names, note)


@lru_cache(maxsize=1)
def variants() -> tuple[Variant, ...]:
    """Every systematic variant: each distinct field (in the first record of the fixtures holding it), each replacement.

    A field the CPU fixture has is damaged there (the smallest lines); the GPU
    fixtures add what only they hold (GPU busy, FP8 state, data-parallel
    ranks, GPUs and clocks in the header).
    """
    out: list[Variant] = []
    seen: set[tuple[Any, ...]] = set()
    for fixture in FIXTURE_NAMES:
        recs = records(fixture)
        for index, rec in enumerate(recs):
            record_type = "header" if index == 0 else "case"
            length = {p: len(v) for p, v in walk(rec) if isinstance(v, list)}
            for path, original in walk(rec):
                shape = _shape(record_type, path, length)
                if shape in seen:
                    continue
                seen.add(shape)
                for replacement, value in replacements(original, field_kind(record_type, path)[1].free):
                    out.append(_variant(fixture, recs, index, path, replacement, value))
    return tuple(out)


# --- the failures named in the issue, and a few more of each kind ---------------------------------------


def _first_case_index(recs: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> int:
    """The index of the first case record passing ``test``."""
    return next(i for i, r in enumerate(recs) if i > 0 and test(r))


FROM_THE_ISSUE = (
    "gpu_busy_busy_fraction_string", "phases_build_s_string", "launch_preload_s_string", "validation_metric_list",
    "validation_value_string", "fp8_state_list", "fp8_state_flags_number", "matrix_name_null", "command_numbers",
    "compile_cache_string", "gpu_clocks_list", "gpu_without_index", "case_id_surrogate", "reason_surrogate",
    "cpu_surrogate", "schema_version_string_case_line",
)
"""The named variants that are the failures the issue reports (tracebacks in report/compare, compare's exit 1,
a whole file refused for one case line)."""


@lru_cache(maxsize=1)
def named_variants() -> tuple[Variant, ...]:
    """The variants the issue reports as tracebacks, exit 1 or a refused file, each by name; plus ride-along keys.

    ``name`` is the file name in ``nested/``. Case lines are skipped, headers
    refused; the ride-along ones (a key this tebench does not know) are kept,
    their value unchanged.
    """
    out: list[Variant] = []
    skipped, refused, kept = frozenset({"skipped"}), frozenset({"refused"}), frozenset({"kept"})

    def case(name: str, fixture: str, pick: Callable[[dict[str, Any]], bool], path: Path_, value: Any,
             outcome: frozenset[str] = skipped, names: tuple[str, ...] = (), note: str = "") -> None:
        recs = records(fixture)
        out.append(_variant(fixture, recs, _first_case_index(recs, pick), path, "named", value, allowed_=outcome,
                            names=names, name=name, note=note))

    def header(name: str, fixture: str, path: Path_, value: Any, edit: Callable[[dict[str, Any]], None] | None = None,
               outcome: frozenset[str] = refused, names: tuple[str, ...] = (), note: str = "") -> None:
        recs = records(fixture)
        out.append(_variant(fixture, recs, 0, path, "named", value, allowed_=outcome, names=names, name=name,
                            edit=edit, note=note))

    def ok_gpu(r: dict[str, Any]) -> bool:
        return r["status"] == "ok" and r.get("gpu_busy") is not None

    def ok(r: dict[str, Any]) -> bool:
        return r["status"] == "ok"

    def fp8(r: dict[str, Any]) -> bool:
        return bool(r.get("fp8_state"))

    def skipped_case(r: dict[str, Any]) -> bool:
        return r["status"] == "skipped"

    gpu, cpu, dist = "h200-crossover", "cpu-smoke", "h200x2-distributed"
    # The issue's list first (FROM_THE_ISSUE), then more of each kind.
    case("gpu_busy_busy_fraction_string", gpu, ok_gpu, ("gpu_busy", "busy_fraction"), "0.51",
         note="compare exited 1 (a regression) on it")
    case("gpu_busy_busy_fraction_list", gpu, ok_gpu, ("gpu_busy", "busy_fraction"), [0.5])
    case("gpu_busy_kernel_ms_string", gpu, ok_gpu, ("gpu_busy", "kernel_ms_per_step"), "3.2")
    case("phases_build_s_string", cpu, ok, ("phases", "build_s"), "1.0")
    case("phases_measure_s_object", cpu, ok, ("phases", "measure_s"), {"s": 0.18})
    case("launch_list", cpu, ok, ("launch",), ["cold"])
    case("launch_method_number", cpu, ok, ("launch", "method"), 3)
    case("launch_preload_s_string", cpu, ok, ("launch", "preload_s"), "3.25")
    case("warmup_settled_string", cpu, ok, ("warmup", "settled"), "yes")
    case("validation_metric_number", cpu, ok, ("validation", "metric"), 5)
    case("validation_metric_list", cpu, ok, ("validation", "metric"), ["greedy_accuracy"])
    case("validation_value_string", gpu, ok_gpu, ("validation", "greedy_accuracy"), "high")
    case("fp8_state_list", gpu, fp8, ("fp8_state",), [1, 2])
    case("fp8_state_flags_number", gpu, fp8, ("fp8_state", "flags"), 3)
    case("fp8_state_layers_string", gpu, fp8, ("fp8_state", "layers"), "blocks")
    case("fp8_state_scale_string", gpu, fp8, ("fp8_state", "layers", "blocks.0.self_attention.layernorm_qkv",
                                              "fwd.gemm1.input", "scale", 0), "77")
    case("distributed_per_rank_tokens_string", dist, lambda r: bool(r.get("distributed")) and not fp8(r),
         ("distributed", "per_rank", 1, "tokens_per_s"), "fast")
    case("device_uuid_number", gpu, ok_gpu, ("device", "uuid"), 7)
    case("device_name_surrogate", gpu, ok_gpu, ("device", "name"), "NVIDIA " + SURROGATE)
    case("case_id_surrogate", cpu, ok, ("case_id",), "gpt/tiny/" + SURROGATE)
    case("reason_surrogate", cpu, skipped_case, ("reason",), SURROGATE + " needs a CUDA GPU")
    case("loss_per_step_surrogate", cpu, ok, ("loss", "per_step", 3), SURROGATE)
    case("case_dims_string", cpu, ok, ("case", "dims", "d_model"), "64")
    case("timing_sample_negative", cpu, ok, ("timing", "samples_ms", 0), -1.5,
         note="kept today: compare calls the case invalid and exits 1 (a regression)")
    case("memory_peak_huge_int", cpu, ok, ("memory", "peak_rss_bytes"), 2**70, outcome=frozenset({"kept", "skipped"}),
         note="a finite number, but beyond SQLite's 64-bit integers: history add must not fall over")
    case("schema_version_string_case_line", cpu, ok, ("schema_version",), "1", names=("schema_version",),
         note="today the whole file is refused, not the line skipped")
    header("matrix_name_null", cpu, ("matrix", "name"), None)
    header("matrix_name_number", cpu, ("matrix", "name"), 5)
    header("command_numbers", cpu, ("command", 1), 3, edit=lambda h: h.update(command=["tebench", 3, 4]))
    header("compile_cache_string", cpu, ("compile_cache",), "warm")
    header("compile_cache_state_number", cpu, ("compile_cache", "state"), 1)
    header("gpu_clocks_list", gpu, ("env", "gpu_clocks"), ["1980"])
    header("gpu_clocks_entry_string", gpu, ("env", "gpu_clocks", "0"), "n/a")
    header("gpu_without_index", gpu, ("env", "gpus", 0, "index"), None,
           edit=lambda h: h["env"]["gpus"][0].pop("index"), names=("env.gpus[0]",))
    header("gpu_index_string", gpu, ("env", "gpus", 0, "index"), "0")
    header("gpu_memory_string", gpu, ("env", "gpus", 0, "memory_bytes"), "141 GiB")
    header("cpu_surrogate", cpu, ("env", "cpu"), "AMD " + SURROGATE)
    header("hostname_surrogate", cpu, ("env", "hostname"), SURROGATE)
    header("peak_tflops_string", gpu, ("env", "peak_tflops", "bf16"), "989")

    # Keys this tebench does not know (a newer one wrote them): kept, and written back unchanged.
    future = {"from": "a newer tebench", "values": [1, 2.5, None]}
    case("ride_along_case_key", cpu, ok, ("future_part",), future, outcome=kept)
    case("ride_along_nested_key", gpu, ok_gpu, ("gpu_busy", "future_key"), future, outcome=kept)
    header("ride_along_header_key", cpu, ("future_header_part",), future, outcome=kept)
    header("ride_along_env_key", gpu, ("env", "future_probe"), future, outcome=kept)
    return tuple(out)


def write_corpus(root: Path) -> int:
    """Write the named variants to ``root`` (one file each) with ``expected.json``; returns how many."""
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    expected: dict[str, dict[str, Any]] = {}
    for v in named_variants():
        (root / f"{v.name}.jsonl").write_text(v.text())
        expected[f"{v.name}.jsonl"] = {"fixture": v.fixture, "line": v.line, "field": v.field,
                                       "outcome": sorted(v.allowed), "names": list(v.fragments()),
                                       **({"note": v.note} if v.note else {})}
    (root / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    return len(expected)
