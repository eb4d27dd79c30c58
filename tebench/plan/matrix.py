"""Matrix files: load, validate and expand into cases.

A matrix file (TOML, see ``benchmarks/``) names the axes; :func:`iter_cases`
expands their product, applies the declared ``[[exclude]]`` rules and yields
one frozen :class:`Case` per point. Every problem in a file is reported as a
:class:`MatrixError` naming the file, the key and the value, before anything runs.
"""

from __future__ import annotations

import codecs
import copy
import dataclasses
import hashlib
import os
import itertools
import json
import math
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from tebench.escape import short_repr
from tebench.schema import knobs as fields
from tebench import bounded
from tebench.schema.knobs import FieldError, knob
from tebench.schema.fp8_point import FP8Point
from tebench.schema.settings import Settings
from tebench.schema.vocabulary import PARALLEL
from tebench.plan.modes import MODES
from tebench.plan.recipes import DEFAULT_RECIPE, RECIPES, fp8_options
from tebench.workloads import BUILT_IN, SPECS, SizeError
from tebench.workloads.plugins import PluginError
from tebench.workloads.spec import size_from_dict
from tebench.errors import TebenchError

if TYPE_CHECKING:  # the types only: --help builds the parser without pydantic
    from tebench.schema.records import Case, FP8Options

NAME_MAX = 64
"""Longest workload or size name (they become parts of case ids and file names)."""
MAX_EXTENDS = 64
"""Longest ``extends`` chain (files, the matrix itself included); presets extend one or two."""
MAX_NESTING = 32
"""Deepest nesting of tables and arrays in a matrix file; a matrix needs 4."""


class MatrixError(TebenchError, ValueError):
    """A matrix file that cannot be used; the message names file, key and value."""

    def __init__(self, source: str, key: str, value: Any, message: str):
        self.source, self.key, self.value = source, key, value
        shown = "" if value is _MISSING or fields.is_missing(value) else f" = {_show(value)}"
        super().__init__(f"{source}: [{key}]{shown}: {message}")


_MISSING = object()


def _show(value: Any) -> str:
    return short_repr(value, 120)  # safe for a hexadecimal integer past the decimal digit limit


# Outside TebenchError on purpose: internal control flow that never leaves this module (:func:`expand`
# turns it into a MatrixError naming the file).
class _Bad(ValueError):
    """A bad value found while expanding; :func:`iter_cases` adds the file that holds it."""

    def __init__(self, key: str, value: Any, message: str):
        super().__init__(message)
        self.key, self.value = key, value


@dataclass(frozen=True)
class AxisValue:
    """One value of each ``[axes]`` list (and of the ``[[exclude]]`` keys that name them)."""

    workloads: str = knob(BUILT_IN[0], f"A workload: built in ({', '.join(BUILT_IN)}), or a user workload's "
                                       "import path or entry-point name (checked where its sizes are).")
    modes: str = knob(next(iter(MODES)), "A precision mode.", choices=tuple(MODES))
    graphs: bool = knob(False, "Capture the model's layer stack in CUDA graphs.")
    fp8_weights: bool = knob(False, "Keep weights in FP8 (TE-FP8 only; AO-FP8 cases are made without).")
    parallel: str = knob("single", "single, or data parallel (ddp, fsdp2) over nproc processes.", choices=PARALLEL)
    nproc: int = knob(2, "Processes (GPUs) of a data-parallel case.", min=1, max=1024)


def _fp8_axis(name: str, **limits: Any) -> Any:
    """The field of an ``[fp8]`` list: its values are the FP8 option ``name``, declared in :class:`FP8Point`."""
    declared = fields.fields_by_name(FP8Point)[name]
    meta = {key: declared.metadata[key] for key in ("min", "max", "choices")}
    return knob(declared.default, declared.metadata["doc"], **{**meta, **limits})


@dataclass(frozen=True)
class FP8AxisValue:
    """One value of each ``[fp8]`` list (and of the ``[[exclude]]`` keys that name them): an option of
    :class:`FP8Point`, and for a recipe one the plan knows."""

    recipes: str = _fp8_axis("recipe", choices=tuple(RECIPES))
    formats: str = _fp8_axis("format")
    amax_history_len: int = _fp8_axis("amax_history_len")
    amax_compute_algo: str = _fp8_axis("amax_compute_algo")
    calibration_steps: int = _fp8_axis("calibration_steps")


# [[exclude]] key -> (dataclass, field) whose declaration its values must fit.
EXCLUDE_FIELDS: dict[str, tuple[type, str]] = {
    "workload": (AxisValue, "workloads"), "mode": (AxisValue, "modes"), "graphs": (AxisValue, "graphs"),
    "fp8_weights": (AxisValue, "fp8_weights"), "parallel": (AxisValue, "parallel"), "nproc": (AxisValue, "nproc"),
    "recipe": (FP8AxisValue, "recipes"), "format": (FP8AxisValue, "formats"),
    "amax_history_len": (FP8AxisValue, "amax_history_len"),
    "amax_compute_algo": (FP8AxisValue, "amax_compute_algo"),
    "calibration_steps": (FP8AxisValue, "calibration_steps"),
}


def check_name(name: Any) -> str | None:
    """Why ``name`` cannot be part of a case id (None when it can).

    Names become path components of case ids (``gpt/<size>/<mode>``) and of
    log file names: a "/" would split the id, control characters would garble
    terminals and reports.
    """
    if not isinstance(name, str):
        return f"must be a string, not {type(name).__name__}"
    if not name or name != name.strip():
        return "must be a non-empty name without leading or trailing spaces"
    if len(name) > NAME_MAX:
        return f"is longer than {NAME_MAX} characters"
    if "/" in name:
        return 'must not contain "/" (it would split the case id)'
    bad = next((ch for ch in name if _unprintable(ch)), None)
    if bad is not None:
        return (f"must not contain control, format, line- or paragraph-separator characters "
                f"(U+{ord(bad):04X}, {unicodedata.category(bad)})")
    return None


def _unprintable(ch: str) -> bool:
    """Control (Cc), format (Cf), surrogate, private-use and unassigned characters (C*), and the
    line and paragraph separators (Zl, Zp): terminals and renderers act on them or hide them."""
    category = unicodedata.category(ch)
    return category.startswith("C") or category in ("Zl", "Zp")


@dataclass
class Matrix:
    """A loaded, validated matrix file."""

    name: str
    source: str
    data: dict[str, Any]
    """The resolved contents (after ``extends``), as stored in results headers."""
    text_sha256: str
    description: str = ""
    origins: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Key path (``sizes.gpt.a.d_model``, ``exclude[2]``) -> the file that set it, through ``extends``."""

    @property
    def sha256(self) -> str:
        """Hash of the resolved matrix: equal for two files that expand to the same cases."""
        return hashlib.sha256(json.dumps(self.data, sort_keys=True, default=str).encode()).hexdigest()

    def origin(self, key: str) -> str:
        """The file that holds ``key`` (the longest recorded prefix of it), else this matrix's own."""
        parts = key.split(".")
        while parts:
            found = self.origins.get(".".join(parts))
            if found:
                return found
            parts.pop()
        return self.origins.get("", self.source)


MAX_CASES = 10_000
"""The most points a matrix's product may have, before its exclusions: far past any benchmark one machine can
run (the shipped presets have at most a few hundred), and a bound on what a few lines of TOML make a plan hold."""

TOP_KEYS = {"name", "description", "extends", "settings", "axes", "fp8", "sizes", "exclude"}
AXIS_KEYS = {f.name for f in dataclasses.fields(AxisValue)}
_SETTING_NAMES = frozenset(f.name for f in dataclasses.fields(Settings))
FP8_KEYS = {f.name for f in dataclasses.fields(FP8AxisValue)}
EXCLUDE_KEYS = {"size", "reason", *EXCLUDE_FIELDS}


def preset_names() -> list[str]:
    """Names of the presets shipped in ``benchmarks/``."""
    return sorted(p.name[:-5] for p in _presets_dir().iterdir() if p.name.endswith(".toml"))


def _presets_dir() -> Any:
    try:
        return resources.files("tebench.presets")
    except ModuleNotFoundError:  # running from a source tree that is not installed
        return Path(__file__).resolve().parents[2] / "benchmarks" / "matrices"


def preset_path(name: str) -> Path:
    """Path of a shipped preset; MatrixError naming the known ones when it does not exist."""
    if check_name(name) is None:
        path = _presets_dir() / f"{name}.toml"
        if path.is_file():
            return Path(str(path))
    import difflib

    close = difflib.get_close_matches(str(name), preset_names(), 1, 0.6)
    guess = f"did you mean {close[0]!r}? " if close else ""
    # auto is the CLI's choice between two of them (smoke on a CPU, tutorial on a GPU), offered by --help too.
    raise MatrixError("--preset", "preset", name, f"no such preset ({guess}known: auto, {', '.join(preset_names())})")


def _depth(data: Any) -> int:
    """How deeply tables and arrays nest in ``data`` (a walk with a stack: no recursion to exhaust)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_NESTING:
            return depth
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _read_toml(path: Path, source: str, budget: int = bounded.MATRIX_MAX_BYTES) -> tuple[dict[str, Any], str, int]:
    """A matrix file's table, the sha256 of its bytes and their count; at most ``budget`` bytes are read."""
    try:
        raw = bounded.read_bytes(path, "matrix file", budget)
    except bounded.InputError as exc:
        message = str(exc).removeprefix(f"{path}: ")
        if budget < bounded.MATRIX_MAX_BYTES and "larger than" in message:
            message += f" (the files of an extends chain share {bounded.MATRIX_MAX_BYTES // 1024} KiB)"
        raise MatrixError(source, "file", _MISSING, message) from None
    except OSError as exc:
        raise MatrixError(source, "file", _MISSING, f"cannot read: {exc.strerror or exc}") from None
    # A byte-order mark, as some editors save UTF-8, is not part of the text (tomllib refuses it as an invalid
    # statement); the hash stays that of the file's bytes.
    body = raw[len(codecs.BOM_UTF8):] if raw.startswith(codecs.BOM_UTF8) else raw
    try:
        data = tomllib.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise MatrixError(source, "file", _MISSING, f"not valid TOML: not UTF-8 text, as TOML must be: line "
                                                    f"{line} holds the byte 0x{body[exc.start]:02x} ({exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise MatrixError(source, "file", _MISSING, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise MatrixError(source, "file", _MISSING, "not valid TOML: nested too deeply") from None
    except ValueError:  # tomllib's int() of a decimal integer past the 4,300-digit limit
        raise MatrixError(source, "file", _MISSING, f"not valid TOML: {_huge_decimal(body)}") from None
    # Every later step (merging extends, recording origins, hashing, writing the header) walks the
    # tables recursively: a file nested deeper than any matrix needs is refused here, once.
    if _depth(data) > MAX_NESTING:
        raise MatrixError(source, "file", _MISSING, f"tables or arrays nested more than {MAX_NESTING} deep "
                                                    "(a matrix needs 4: the file, sizes, a workload, a size)")
    return data, hashlib.sha256(raw).hexdigest(), len(raw)


def _huge_decimal(raw: bytes) -> str:
    """Where a decimal integer too long for Python's int() is in a matrix file's text."""
    limit = sys.get_int_max_str_digits()
    found = re.search(rb"[0-9][0-9_]{%d,}" % limit, raw)
    if found is None:
        return f"a number past Python's {limit}-digit limit"
    line = raw.count(b"\n", 0, found.start()) + 1
    return f"line {line}: an integer of {len(found.group())} digits, past Python's {limit}-digit limit"


def _origins(data: dict[str, Any], source: str, prefix: str = "") -> dict[str, str]:
    """Every key path of one file's table -> that file (exclude rules are added by _merge)."""
    out = {}
    for key, value in data.items():
        if key == "exclude" and not prefix:
            continue
        path = f"{prefix}{key}"
        out[path] = source
        if isinstance(value, dict):
            out.update(_origins(value, source, path + "."))
    return out


EXCLUDE_SHAPE = "must be an array of tables ([[exclude]])"
"""What a matrix's ``exclude`` must be: ``[[exclude]]`` rules, not one ``[exclude]`` table."""


def _merge(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """Child overrides base; tables merge recursively, lists are replaced, excludes add up."""
    out = copy.deepcopy(base)
    for key, value in child.items():
        if key == "exclude":  # both arrays: _resolve checks each file's before merging
            out["exclude"] = list(out.get("exclude", [])) + copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _exclude_count(data: dict[str, Any]) -> int:
    return len(data.get("exclude", []))


def _parent_path(path: Path, source: str, parent: Any) -> Path:
    """The file an ``extends`` value names: a sibling .toml file, else a shipped preset (also where the sibling is
    the file itself: ``smoke.toml`` holding ``extends = "smoke"`` extends the preset)."""
    if not isinstance(parent, str) or not parent.strip() or any(_unprintable(ch) for ch in parent):
        raise MatrixError(source, "extends", parent, "must be a preset name or a path to a .toml file")
    candidate = path.parent / (parent if parent.endswith(".toml") else f"{parent}.toml")
    shipped = _presets_dir() / f"{parent.removesuffix('.toml')}.toml"
    # A file named like a preset that extends that name means the preset: it cannot mean itself.
    itself = candidate.is_file() and candidate.resolve() == path.resolve() and "/" not in parent
    if itself and shipped.is_file():
        return Path(str(shipped))
    if not candidate.is_file() and os.path.lexists(candidate):
        # Something of that name is there but cannot be read as a file: never fall back to the shipped preset in
        # its place (the user meant the file), nor say "no such file" of a path that exists.
        what = (f"a symbolic link to {os.readlink(candidate)}, which does not exist"
                if candidate.is_symlink() and not candidate.exists()
                else "a directory" if candidate.is_dir() else "not a regular file")
        raise MatrixError(source, "extends", parent, f"{candidate} is {what}, not a matrix file to read")
    if not candidate.is_file():
        if "/" in parent or not shipped.is_file():
            raise MatrixError(source, "extends", parent,
                              f"no such file ({candidate}) and no shipped preset of that name "
                              f"(known: {', '.join(preset_names())})")
        candidate = Path(str(shipped))
    return candidate


def _resolve(path: Path, source: str) -> tuple[dict[str, Any], dict[str, str], str]:
    """The file's table with its ``extends`` chain merged in, where each key came from, and the
    sha256 of the file's own bytes.

    The chain is followed in a loop, at most MAX_EXTENDS files deep, and all its files together
    may hold at most ``bounded.MATRIX_MAX_BYTES``.
    """
    chain: list[tuple[dict[str, Any], dict[str, str], str]] = []  # (data, own origins, source), child first
    seen: list[str] = []  # the chain's files, resolved, in order
    budget = bounded.MATRIX_MAX_BYTES
    text_sha = ""
    while True:
        data, sha, size = _read_toml(path, source, budget)
        budget -= size
        text_sha = text_sha or sha
        seen.append(str(path.resolve()))
        parent = data.pop("extends", None)
        if not isinstance(data.get("exclude", []), list):
            # Per file, before a chain's rules add up: merged, a table would pass as a list of its keys.
            raise MatrixError(source, "exclude", data["exclude"], EXCLUDE_SHAPE)
        own = _origins(data, source)
        own[""] = source
        chain.append((data, own, source))
        if parent is None:
            break
        candidate = _parent_path(path, source, parent)
        if str(candidate.resolve()) in seen:
            loop = seen[seen.index(str(candidate.resolve())):] + [str(candidate.resolve())]
            raise MatrixError(source, "extends", parent, "extends itself (a cycle)" if len(loop) == 2 else
                              "closes a cycle of extends: " + " -> ".join(loop))
        if len(chain) >= MAX_EXTENDS:
            raise MatrixError(source, "extends", parent,
                              f"an extends chain longer than {MAX_EXTENDS} files (from {chain[0][2]})")
        path, source = candidate, str(candidate)
    merged, origins, root_source = chain.pop()
    origins.update({f"exclude[{i}]": root_source for i in range(_exclude_count(merged))})
    for data, own, source in reversed(chain):
        merged.pop("name", None)
        merged.pop("description", None)
        inherited = _exclude_count(merged)
        origins.update(own)
        origins.update({f"exclude[{inherited + i}]": source for i in range(_exclude_count(data))})
        merged = _merge(merged, data)
    return merged, origins, text_sha


def load(spec: str | Path, is_preset: bool = False) -> Matrix:
    """Load a matrix from a preset name or a file path, validating it completely.

    Needs no torch and no hardware: every check here is on the file's data.
    """
    path = preset_path(str(spec)) if is_preset else Path(spec)
    source = f"preset '{spec}' ({path})" if is_preset else str(spec)
    if not is_preset and not path.exists() and not path.is_symlink() and str(spec) in preset_names():
        # `tebench list smoke`: a preset's name where a file was wanted.
        raise MatrixError(source, "file", _MISSING, f"no such file; {spec!r} is a preset: give --preset {spec}")
    data, origins, text_sha = _resolve(path, source)
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise MatrixError(source, key, data[key], "must be a string")
    name = data.get("name", path.stem)
    if check_name(name) is not None:
        raise MatrixError(source, "name", name, check_name(name) or "")
    matrix = Matrix(
        name=str(name),
        source=str(path),
        data=data,
        text_sha256=text_sha,
        description=str(data.get("description", "")),
        origins={**origins, "": source},
    )
    cases = list(iter_cases(matrix))
    if not cases:
        raise MatrixError(source, "exclude", _MISSING, "every case of the matrix is excluded: nothing to run")
    return matrix


def _list(key: str, value: Any, cls: type, name: str) -> list[Any]:
    """A list axis (or a single value), each element checked against ``cls.name``'s declaration."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise _Bad(key, value, "must not be empty")
    out = []
    for v in values:
        try:
            out.append(fields.check_value(cls, name, v))
        except FieldError as exc:
            raise _Bad(key, v, str(exc)) from None
    return out


def _settings(where: str, table: dict[str, Any], base: Settings) -> Settings:
    known = Settings.field_names()
    for key, value in table.items():
        if key not in known:
            raise _Bad(f"{where}.{key}", value, f"unknown setting (known: {', '.join(sorted(known))})")
    try:
        return fields.build(Settings, table, require_all=False, base=base)
    except FieldError as exc:
        raise _Bad(f"{where}.{exc.key}", exc.value, str(exc)) from None


def _unknown(where: str, table: dict[str, Any], known: set[str]) -> None:
    for key in table:
        if key not in known:
            raise _Bad(f"{where}{key}", table[key], f"unknown key (known: {', '.join(sorted(known))})")


def _matches(rule: dict[str, Any], case: Case) -> bool:
    fp8 = case.fp8
    values = {
        "workload": case.workload, "size": case.size, "mode": case.mode,
        "recipe": fp8.recipe if fp8 else None, "format": fp8.format if fp8 else None,
        "amax_history_len": fp8.amax_history_len if fp8 else None,
        "amax_compute_algo": fp8.amax_compute_algo if fp8 else None,
        "calibration_steps": fp8.calibration_steps if fp8 else None,
        "graphs": case.graphs, "fp8_weights": case.fp8_weights, "parallel": case.parallel, "nproc": case.nproc,
    }
    for key, want in rule.items():
        if key == "reason":
            continue
        if values[key] not in _listed(want):
            return False
    return True


@dataclass
class _Axes:
    """The validated axes of a matrix."""

    workloads: list[str]
    modes: list[str]
    graphs: list[bool]
    fp8_weights: list[bool]
    parallel: list[str]
    nprocs: list[int]
    fp8_points: list[FP8Options]


def _axes(data: dict[str, Any], sizes: dict[str, Any]) -> _Axes:
    axes = data.get("axes", {})
    _unknown("axes.", axes, AXIS_KEYS)
    workloads = _list("axes.workloads", axes.get("workloads", list(sizes)), AxisValue, "workloads")
    for wl in workloads:
        if not sizes.get(wl):
            raise _Bad("axes.workloads", wl, f"listed, but the matrix has no [sizes.{wl}.<name>] table")
    modes = axes.get("modes", list(MODES))
    modes = list(MODES) if modes == "all" else _list("axes.modes", modes, AxisValue, "modes")

    fp8 = data.get("fp8", {})
    _unknown("fp8.", fp8, FP8_KEYS)
    lists = [_list(f"fp8.{name}", fp8.get(name, [declared.default]), FP8AxisValue, name)
             for name, declared in fields.fields_by_name(FP8AxisValue).items()]
    if math.prod(map(len, lists)) > MAX_CASES:
        raise _Bad("fp8", _MISSING, f"its lists make {' x '.join(str(len(v)) for v in lists)} = "
                   f"{math.prod(map(len, lists)):,} FP8 points, more than the {MAX_CASES:,} cases a matrix may have")
    points = itertools.product(*lists)
    return _Axes(
        workloads=workloads,
        modes=modes,
        graphs=_list("axes.graphs", axes.get("graphs", [False]), AxisValue, "graphs"),
        fp8_weights=_list("axes.fp8_weights", axes.get("fp8_weights", [False]), AxisValue, "fp8_weights"),
        parallel=_list("axes.parallel", axes.get("parallel", ["single"]), AxisValue, "parallel"),
        nprocs=_list("axes.nproc", axes.get("nproc", [2]), AxisValue, "nproc"),
        fp8_points=list(dict.fromkeys(fp8_options(*point) for point in points)),
    )


def _rules(data: dict[str, Any], sizes: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``[[exclude]]`` rules, each value checked: a mode, recipe, ... against its declaration, a workload or
    size against the matrix's own ``[sizes]`` (a misspelt one would exclude nothing, silently)."""
    size_names = sorted({name for table in sizes.values() if isinstance(table, dict) for name in table})
    rules = data.get("exclude", [])
    if not isinstance(rules, list):
        raise _Bad("exclude", rules, EXCLUDE_SHAPE)
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            raise _Bad(f"exclude[{i}]", rule, "must be a table")
        _unknown(f"exclude[{i}].", rule, EXCLUDE_KEYS)
        for key, value in rule.items():
            if key == "reason":
                if not isinstance(value, str):
                    raise _Bad(f"exclude[{i}].reason", value, "must be a string")
            elif key == "size":
                if value == []:
                    raise _Bad(f"exclude[{i}].size", value, "must not be empty (an empty list matches no case)")
                for v in _listed(value):
                    if check_name(v) is not None:
                        raise _Bad(f"exclude[{i}].size", v, check_name(v) or "")
                    if v not in size_names:
                        raise _Bad(f"exclude[{i}].size", v, "no workload of this matrix has a size of that name "
                                                            f"(its sizes: {', '.join(size_names)})")
            else:
                _list(f"exclude[{i}].{key}", value, *EXCLUDE_FIELDS[key])
                if key == "workload":
                    for v in _listed(value):
                        if v not in sizes:
                            raise _Bad(f"exclude[{i}].workload", v, f"the matrix has no [sizes.{v}.<name>] table "
                                                                    f"(its workloads: {', '.join(sizes)})")
        if "workload" in rule and "size" in rule:
            # Each name exists somewhere, but a size none of the rule's workloads has matches nothing.
            named = _listed(rule["workload"])
            theirs = sorted({n for w in named if isinstance(sizes.get(w), dict) for n in sizes[w]})
            for v in _listed(rule["size"]):
                if v not in theirs:
                    raise _Bad(f"exclude[{i}].size", v, f"no size of that name in the rule's workload(s) "
                                                        f"{', '.join(named)} (their sizes: {', '.join(theirs)})")
    return rules


def _listed(value: Any) -> list[Any]:
    """An ``[[exclude]]`` value as the list of values it matches (one value, or a list of them)."""
    return value if isinstance(value, list) else [value]


def _size(workload: str, size_name: str, dims: Any, base: Settings) -> tuple[Any, Settings]:
    """A size table -> (its validated size dataclass, its settings)."""
    where = f"sizes.{workload}.{size_name}"
    why = check_name(size_name)
    if why:
        raise _Bad(f"sizes.{workload}", size_name, f"size name {why}")
    if not isinstance(dims, dict):
        raise _Bad(where, dims, "must be a table of dimensions")
    overrides = {k: v for k, v in dims.items() if k in _SETTING_NAMES}
    shape = {k: v for k, v in dims.items() if k not in overrides}
    settings = _settings(where, overrides, base) if overrides else base
    # The lr rises over lr_warmup optimizer steps: longer than the run, it never reaches the lr the file sets
    # (a warm-up of 1,000,000 steps over 4 kept it below 5e-9, without a word).
    if settings.lr_warmup > settings.warmup + settings.steps:
        raise _Bad(f"{where}.lr_warmup" if "lr_warmup" in overrides else "settings.lr_warmup", settings.lr_warmup,
                   f"longer than the run at this size (warmup {settings.warmup} + steps {settings.steps} = "
                   f"{settings.warmup + settings.steps} optimizer steps): the learning rate would never reach "
                   f"lr = {settings.lr:g}")
    spec = SPECS[workload]
    try:
        size = size_from_dict(spec.size_type, shape, where)
        spec.check(size)
    except SizeError as exc:
        key = f"{where}.{exc.key}" if exc.key else where
        raise _Bad(key, exc.value, str(exc)) from None
    except Exception as exc:  # a user workload's check() may raise anything: name it, never a traceback
        raise _Bad(where, dims, f"workload '{workload}': its check() of this size raised "
                                f"{type(exc).__name__}: {exc}") from None
    return size, settings


@dataclass(frozen=True)
class Exclusion:
    """One ``[[exclude]]`` rule as written, its reason and how many cases it removed."""

    rule: dict[str, Any]
    """The rule's axis keys and values (``reason`` apart)."""
    reason: str | None
    cases: int
    """Cases this rule removed. A case two rules match counts for the first of them, so the
    counts add up to the cases the matrix excludes."""
    ids: frozenset[str] = field(default=frozenset(), compare=False)
    """The ids of those cases (not stored: ``--only`` names the rule that removed what it asks for)."""

    def to_dict(self) -> dict[str, Any]:
        """The form stored in a run's header (``excluded``)."""
        return {"rule": dict(self.rule), "reason": self.reason, "cases": self.cases}


def exclusion_text(entry: dict[str, Any]) -> str:
    """One line for an exclusion in its stored form: ``mode=TE-FP8 graphs=true: 4 case(s) (why)``."""
    def show(value: Any) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(show(v) for v in value) + "]"
        return str(value).lower() if isinstance(value, bool) else str(value)

    rule = " ".join(f"{key}={show(value)}" for key, value in (entry.get("rule") or {}).items()) or "(empty rule)"
    reason = entry.get("reason")
    return f"{rule}: {entry.get('cases', 0)} case(s)" + (f" ({reason})" if reason else " (no reason given)")


@dataclass
class Expansion:
    """A matrix expanded: the cases that run, and what each exclusion rule took away."""

    cases: list[Case]
    excluded: list[Exclusion]


def expand(matrix: Matrix) -> Expansion:
    """Expand a matrix into cases, in a stable order, exclusions applied and counted.

    Raises MatrixError for anything invalid, naming the file (through
    ``extends``) that holds the bad value; the expansion itself is the
    validation, so ``tebench list`` and ``tebench run`` can never disagree.
    """
    try:
        return _expand(matrix.data)
    except _Bad as bad:
        raise MatrixError(matrix.origin(bad.key), bad.key, bad.value, str(bad)) from None


def iter_cases(matrix: Matrix) -> Iterator[Case]:
    """The cases of :func:`expand`, in its order."""
    yield from expand(matrix).cases


def _expand(data: Any) -> Expansion:
    base, sizes = _top_level(data)
    axes = _axes(data, sizes)
    rules = _rules(data, sizes)
    kept: dict[str, Case] = {}
    removed: list[set[str]] = [set() for _ in rules]
    candidates = 0
    for case in _candidates(axes, sizes, base):
        candidates += 1
        if candidates > MAX_CASES:  # before the exclusions: each point is built and checked
            raise _Bad("axes", _MISSING, f"the product of the axes, sizes and FP8 points has more than {MAX_CASES:,} "
                       "points before [[exclude]]: more than a matrix may have (split it into several matrices)")
        hit = next((i for i, rule in enumerate(rules) if _matches(rule, case)), None)
        if hit is None:
            kept.setdefault(case.id, case)
        else:
            removed[hit].add(case.id)
    if not candidates:
        # Every axis is non-empty, so only FP8 weights without an FP8 mode leave no point at all.
        fp8_modes = ", ".join(name for name, mode in MODES.items() if mode.fp8 == "te")
        raise _Bad("axes.fp8_weights", axes.fp8_weights,
                   f"FP8 weights exist only under an FP8 mode ({fp8_modes}) and axes.modes lists none, "
                   "so the matrix has no case (add an FP8 mode, or false to fp8_weights)")
    excluded = [Exclusion({k: v for k, v in rule.items() if k != "reason"}, rule.get("reason"), len(ids),
                          frozenset(ids)) for rule, ids in zip(rules, removed)]
    return Expansion(list(kept.values()), excluded)


def _top_level(data: Any) -> tuple[Settings, dict[str, Any]]:
    """The file's top-level tables checked: (the base settings, the sizes by workload)."""
    if not isinstance(data, dict):
        raise _Bad("file", _MISSING, "must be a TOML table")
    _unknown("", data, TOP_KEYS - {"extends"})
    for key in ("settings", "axes", "fp8", "sizes"):
        if key in data and not isinstance(data[key], dict):
            raise _Bad(key, data[key], "must be a table")
    base = _settings("settings", data.get("settings", {}), Settings())
    sizes = data.get("sizes", {})
    if not sizes:
        raise _Bad("sizes", _MISSING, "no sizes: add at least one [sizes.<workload>.<name>] table")
    for wl, table in sizes.items():
        try:
            SPECS[wl]  # built in, or a user workload: imported and protocol-checked before any case runs
        except PluginError as exc:
            raise _Bad(f"sizes.{wl}", _MISSING, str(exc)) from None
        if not isinstance(table, dict):
            raise _Bad(f"sizes.{wl}", table, "must be a table of named sizes")
    return base, sizes


def _candidates(axes: _Axes, sizes: dict[str, Any], base: Settings) -> Iterator[Case]:
    """Every point of the axes' product, before exclusion (sizes validated on the way)."""
    from tebench.schema.records import Case  # pydantic: --help builds the parser without it

    for wl_name in axes.workloads:
        for size_name, dims in sizes[wl_name].items():
            spec, settings = _size(wl_name, size_name, dims, base)
            dim_items = _dims(spec)
            for mode_name, g, w, par in itertools.product(axes.modes, axes.graphs, axes.fp8_weights, axes.parallel):
                mode = MODES[mode_name]
                if w and mode.fp8 != "te":
                    continue  # FP8 weights are TE's (quantized_model_init)
                for n in (axes.nprocs if par != "single" else [1]):
                    for opts in (_library_points(axes.fp8_points, mode.fp8) if mode.fp8 else [None]):
                        yield Case(workload=wl_name, size=size_name, mode=mode_name, dims=dim_items, fp8=opts, graphs=g,
                                   fp8_weights=w, parallel=par, nproc=n, settings=settings)


def _library_points(points: list[FP8Options], library: str) -> list[FP8Options]:
    """The recipe points of one FP8 library; its default recipe where ``[fp8] recipes`` lists none of its
    (a matrix of TE recipes still gives AO-FP8 a case, and the other way round)."""
    mine = [p for p in points if RECIPES[p.recipe].library == library]
    if mine:
        return mine
    # The matrix's own TE options where a listed point has them (a torchao point has none).
    from tebench.schema.records import FP8Options

    given, default = (points[0] if points else FP8Options()), FP8Options()
    pick = [getattr(given, k) if getattr(given, k) is not None else getattr(default, k)
            for k in ("format", "amax_history_len", "amax_compute_algo", "calibration_steps")]
    return [fp8_options(DEFAULT_RECIPE[library], *pick)]


def _dims(size: Any) -> dict[str, Any]:
    """A size's fields by name: ``dataclasses.asdict``'s, without its deep copy for the plain values every
    built-in size holds (it is the bulk of expanding a matrix of many sizes)."""
    # A field declared omit_default is left out while it holds its default: a field added later then
    # changes neither the records nor the case settings of the runs that do not use it.
    items = {f.name: getattr(size, f.name) for f in dataclasses.fields(size)
             if not (f.metadata.get("omit_default") and getattr(size, f.name) == f.default)}
    if all(isinstance(v, (int, float, str, type(None))) for v in items.values()):
        return items
    return {k: v for k, v in dataclasses.asdict(size).items() if k in items}


def reference_order(cases: list[Case]) -> list[Case]:
    """Cases in matrix order, but with each group's reference mode first.

    Parity compares against the reference, so running it first lets the
    runner judge every later case as soon as it finishes.
    """
    groups: dict[tuple, list[Case]] = {}
    for case in cases:
        groups.setdefault((case.workload, case.size), []).append(case)
    return [c for group in groups.values() for c in sorted(group, key=_reference_rank)]


def _reference_rank(case: Case) -> int:
    """0 for PT-FP32, 1 for PT-AMP (parity's reference, in that order of preference); after them, any other mode."""
    from tebench.plan.modes import REFERENCE_MODES

    return REFERENCE_MODES.index(case.mode) if case.mode in REFERENCE_MODES else len(REFERENCE_MODES)


def seeds_for_the_reference(cases: list[Case]) -> list[Case]:
    """``cases`` with ``reference_seeds`` kept only on the mode parity will take as the reference.

    PT-AMP is the reference only where PT-FP32 does not run; beside PT-FP32 its
    replicas would be trained and never read (about 7 s of a tutorial-size case on
    an H200). Applied to the cases that will run (after ``--only``), so a run of
    PT-AMP alone still trains its seeds.
    """
    from tebench.plan.modes import REFERENCE_MODES

    best: dict[tuple, int] = {}
    for case in cases:
        key = (case.workload, case.size)
        best[key] = min(best.get(key, _reference_rank(case)), _reference_rank(case))
    # A reference mode ranked after the group's best is not the reference: its seeds would go unread.
    # (Other modes keep the setting as written; they never train seeds.)
    return [c.replace(settings=dataclasses.replace(c.settings, reference_seeds=0, reference_twins=0))
            if ((c.settings.reference_seeds or c.settings.reference_twins) and _reference_rank(c) < len(REFERENCE_MODES)
                and _reference_rank(c) > best[(c.workload, c.size)]) else c
            for c in cases]
