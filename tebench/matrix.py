"""Matrix files: load, validate and expand into cases.

A matrix file (TOML, see ``benchmarks/``) names the axes; :func:`iter_cases`
expands their product, applies the declared ``[[exclude]]`` rules and yields
one frozen :class:`Case` per point. Every problem in a file is reported as a
:class:`MatrixError` naming the file, the key and the value, before anything runs.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from tebench.modes import MODES
from tebench.recipes import AMAX_ALGOS, FORMATS, RECIPES, FP8Options
from tebench.workloads import WORKLOADS, SizeError

PARALLEL = ("single", "ddp", "fsdp2")


class MatrixError(ValueError):
    """A matrix file that cannot be used; the message names file, key and value."""

    def __init__(self, source: str, key: str, value: Any, message: str):
        self.source, self.key, self.value = source, key, value
        shown = "" if value is _MISSING else f" = {value!r}"
        super().__init__(f"{source}: [{key}]{shown}: {message}")


_MISSING = object()


@dataclass(frozen=True)
class Settings:
    """How each case is run. Any of these can be overridden per size."""

    steps: int = 50
    """Measured train steps (after warm-up)."""
    warmup: int = 5
    """Train steps run before timing starts (compilation, autotuning, allocator growth)."""
    seed: int = 1234
    """Seed of weights and data: every mode of a workload sees the same ones."""
    lr: float = 1e-3
    """AdamW learning rate."""
    lr_warmup: int = 0
    """Steps of linear learning-rate warm-up, from lr/lr_warmup up to lr (0: constant lr).
    Wide models need it: at d_model 4096 a full-size first Adam step drives the loss up."""
    timeout_s: float = 900.0
    """Wall-clock limit of one case's process, start-up included."""
    parity_rtol: float = 0.15
    """Loss parity: the narrowest the band around the reference curve gets (relative). Measured noise
    widens it; 0.15 because PT-AMP ended 9% off PT-FP32 on a tiny GPT on an H200."""
    parity_atol: float = 0.05
    """Loss parity: losses below this count as equal; capped at a tenth of the reference's final loss."""
    profile_steps: int = 3
    """Extra steps run under the profiler on CUDA to measure how busy the GPU is (not timed)."""
    scaling_samples: int = 8
    """How many times over the run FP8 scaling state is sampled."""

    @classmethod
    def field_names(cls) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}


@dataclass(frozen=True)
class Case:
    """One point of the matrix: workload x size x mode x recipe options, with its settings."""

    workload: str
    size: str
    mode: str
    dims: tuple[tuple[str, Any], ...]
    """The size's fields, e.g. (("d_model", 768), ...)."""
    fp8: FP8Options | None = None
    graphs: bool = False
    """Capture the model's layer stack in CUDA graphs."""
    fp8_weights: bool = False
    """Keep weights in FP8 (TE's quantized_model_init) with an FP8-aware optimizer."""
    parallel: str = "single"
    nproc: int = 1
    settings: Settings = field(default_factory=Settings)

    @property
    def id(self) -> str:
        """Stable identity built from the axes, e.g. ``gpt/tutorial/TE-FP8/delayed.E4M3.h16.max``."""
        parts = [self.workload, self.size, self.mode]
        if self.fp8 is not None:
            parts.append(self.fp8.label())
        if self.fp8_weights:
            parts.append("fp8-weights")
        if self.graphs:
            parts.append("graphs")
        if self.parallel != "single":
            parts.append(f"{self.parallel}x{self.nproc}")
        return "/".join(parts)

    @property
    def size_spec(self) -> Any:
        """The workload's size dataclass for this case."""
        return WORKLOADS[self.workload].size_type(**dict(self.dims))

    @property
    def variant(self) -> str:
        """The mode plus its options: the 'column' a report compares across."""
        return self.id.split("/", 2)[2]

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "size": self.size,
            "mode": self.mode,
            "dims": dict(self.dims),
            "fp8": dataclasses.asdict(self.fp8) if self.fp8 else None,
            "graphs": self.graphs,
            "fp8_weights": self.fp8_weights,
            "parallel": self.parallel,
            "nproc": self.nproc,
            "settings": dataclasses.asdict(self.settings),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Case":
        return cls(
            workload=d["workload"],
            size=d["size"],
            mode=d["mode"],
            dims=tuple(d["dims"].items()),
            fp8=FP8Options(**d["fp8"]) if d.get("fp8") else None,
            graphs=d.get("graphs", False),
            fp8_weights=d.get("fp8_weights", False),
            parallel=d.get("parallel", "single"),
            nproc=d.get("nproc", 1),
            settings=Settings(**d.get("settings", {})),
        )


@dataclass
class Matrix:
    """A loaded, validated matrix file."""

    name: str
    source: str
    data: dict[str, Any]
    """The resolved contents (after ``extends``), as stored in results headers."""
    text_sha256: str
    description: str = ""

    @property
    def sha256(self) -> str:
        """Hash of the resolved matrix: equal for two files that expand to the same cases."""
        return hashlib.sha256(json.dumps(self.data, sort_keys=True).encode()).hexdigest()


TOP_KEYS = {"name", "description", "extends", "settings", "axes", "fp8", "sizes", "exclude"}
AXIS_KEYS = {"workloads", "modes", "graphs", "fp8_weights", "parallel", "nproc"}
FP8_KEYS = {"recipes", "formats", "amax_history_len", "amax_compute_algo", "calibration_steps"}
EXCLUDE_KEYS = {"workload", "size", "mode", "recipe", "format", "amax_history_len", "amax_compute_algo",
                "calibration_steps", "graphs", "fp8_weights", "parallel", "nproc", "reason"}


def preset_names() -> list[str]:
    """Names of the presets shipped in ``benchmarks/``."""
    return sorted(p.name[:-5] for p in _presets_dir().iterdir() if p.name.endswith(".toml"))


def _presets_dir() -> Any:
    try:
        return resources.files("tebench.presets")
    except ModuleNotFoundError:  # running from a source tree that is not installed
        return Path(__file__).resolve().parent.parent / "benchmarks" / "matrices"


def preset_path(name: str) -> Path:
    """Path of a shipped preset; MatrixError naming the known ones when it does not exist."""
    path = _presets_dir() / f"{name}.toml"
    if not path.is_file():
        raise MatrixError("--preset", "preset", name, f"no such preset (known: {', '.join(preset_names())})")
    return Path(str(path))


def _read_toml(path: Path, source: str) -> tuple[dict[str, Any], str]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MatrixError(source, "file", _MISSING, f"cannot read: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(raw.decode("utf-8")), hashlib.sha256(raw).hexdigest()
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise MatrixError(source, "file", _MISSING, f"not valid TOML: {exc}") from None


def _merge(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """Child overrides base; tables merge recursively, lists are replaced, excludes add up."""
    out = copy.deepcopy(base)
    for key, value in child.items():
        if key == "exclude":
            out["exclude"] = out.get("exclude", []) + list(value)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _resolve(path: Path, source: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    data, _ = _read_toml(path, source)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise MatrixError(source, "extends", parent, "must be a preset name or a path")
    candidate = path.parent / parent
    if not parent.endswith(".toml"):
        candidate = path.parent / f"{parent}.toml"
    if not candidate.is_file():
        candidate = preset_path(parent)
    key = str(candidate.resolve())
    if key in seen:
        raise MatrixError(source, "extends", parent, "extends itself (a cycle of presets)")
    base = _resolve(candidate, str(candidate), seen + (str(path.resolve()),))
    base.pop("name", None)
    base.pop("description", None)
    return _merge(base, data)


def load(spec: str | Path, is_preset: bool = False) -> Matrix:
    """Load a matrix from a preset name or a file path, validating it completely."""
    path = preset_path(str(spec)) if is_preset else Path(spec)
    source = f"preset '{spec}' ({path})" if is_preset else str(spec)
    _, text_sha = _read_toml(path, source)
    data = _resolve(path, source)
    matrix = Matrix(
        name=str(data.get("name", path.stem)),
        source=str(path),
        data=data,
        text_sha256=text_sha,
        description=str(data.get("description", "")),
    )
    cases = list(iter_cases(matrix))
    if not cases:
        raise MatrixError(source, "exclude", _MISSING, "every case of the matrix is excluded: nothing to run")
    return matrix


def _list(source: str, key: str, value: Any, kind: type | tuple[type, ...], allowed=None) -> list[Any]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise MatrixError(source, key, value, "must not be empty")
    for v in values:
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            raise MatrixError(source, key, v, f"must be {getattr(kind, '__name__', kind)}")
        if allowed is not None and v not in allowed:
            raise MatrixError(source, key, v, f"unknown value (known: {', '.join(map(str, allowed))})")
    return values


def _settings(source: str, where: str, table: dict[str, Any], base: Settings) -> Settings:
    known = Settings.field_names()
    values = {}
    for key, value in table.items():
        if key not in known:
            raise MatrixError(source, f"{where}.{key}", value, f"unknown setting (known: {', '.join(sorted(known))})")
        want = type(getattr(base, key))
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, want) or isinstance(value, bool):
            raise MatrixError(source, f"{where}.{key}", value, f"must be {want.__name__}")
        if value < 0 or (key in ("steps", "timeout_s") and value <= 0):
            raise MatrixError(source, f"{where}.{key}", value, "must be positive")
        values[key] = value
    return dataclasses.replace(base, **values)


def _unknown(source: str, where: str, table: dict[str, Any], known: set[str]) -> None:
    for key in table:
        if key not in known:
            raise MatrixError(source, f"{where}{key}", table[key], f"unknown key (known: {', '.join(sorted(known))})")


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
        wanted = want if isinstance(want, list) else [want]
        if values[key] not in wanted:
            return False
    return True


def iter_cases(matrix: Matrix) -> Iterator[Case]:
    """Expand a matrix into cases, in a stable order, exclusions applied.

    Raises MatrixError for anything invalid; the expansion itself is the
    validation, so ``tebench list`` and ``tebench run`` can never disagree.
    """
    src, data = matrix.source, matrix.data
    if not isinstance(data, dict):
        raise MatrixError(src, "file", _MISSING, "must be a TOML table")
    _unknown(src, "", data, TOP_KEYS)
    for key in ("settings", "axes", "fp8", "sizes"):
        if key in data and not isinstance(data[key], dict):
            raise MatrixError(src, key, data[key], "must be a table")
    base = _settings(src, "settings", data.get("settings", {}), Settings())
    axes = data.get("axes", {})
    _unknown(src, "axes.", axes, AXIS_KEYS)
    sizes = data.get("sizes", {})
    if not sizes:
        raise MatrixError(src, "sizes", _MISSING, "no sizes: add at least one [sizes.<workload>.<name>] table")
    for wl in sizes:
        if wl not in WORKLOADS:
            raise MatrixError(src, f"sizes.{wl}", _MISSING, f"unknown workload (known: {', '.join(WORKLOADS)})")
    workloads = _list(src, "axes.workloads", axes.get("workloads", list(sizes)), str, list(WORKLOADS))
    for wl in workloads:
        if not sizes.get(wl):
            raise MatrixError(src, "axes.workloads", wl, f"listed, but the matrix has no [sizes.{wl}.<name>] table")
    modes = axes.get("modes", list(MODES))
    modes = list(MODES) if modes == "all" else _list(src, "axes.modes", modes, str, list(MODES))
    graphs = _list(src, "axes.graphs", axes.get("graphs", [False]), bool)
    fp8_weights = _list(src, "axes.fp8_weights", axes.get("fp8_weights", [False]), bool)
    parallel = _list(src, "axes.parallel", axes.get("parallel", ["single"]), str, PARALLEL)
    nprocs = _list(src, "axes.nproc", axes.get("nproc", [2]), int)
    for n in nprocs:
        if n < 1:
            raise MatrixError(src, "axes.nproc", n, "must be at least 1")

    fp8 = data.get("fp8", {})
    _unknown(src, "fp8.", fp8, FP8_KEYS)
    recipes = _list(src, "fp8.recipes", fp8.get("recipes", ["delayed"]), str, list(RECIPES))
    formats = _list(src, "fp8.formats", fp8.get("formats", ["HYBRID"]), str, FORMATS)
    histories = _list(src, "fp8.amax_history_len", fp8.get("amax_history_len", [1024]), int)
    for h in histories:
        if h < 1:
            raise MatrixError(src, "fp8.amax_history_len", h, "must be at least 1")
    algos = _list(src, "fp8.amax_compute_algo", fp8.get("amax_compute_algo", ["max"]), str, AMAX_ALGOS)
    calibrations = _list(src, "fp8.calibration_steps", fp8.get("calibration_steps", [0]), int)
    for c in calibrations:
        if c < 0:
            raise MatrixError(src, "fp8.calibration_steps", c, "must be 0 (none) or more")
    fp8_points = list(dict.fromkeys(
        FP8Options.normalized(*point)
        for point in itertools.product(recipes, formats, histories, algos, calibrations)
    ))

    rules = data.get("exclude", [])
    if not isinstance(rules, list):
        raise MatrixError(src, "exclude", rules, "must be an array of tables ([[exclude]])")
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            raise MatrixError(src, f"exclude[{i}]", rule, "must be a table")
        _unknown(src, f"exclude[{i}].", rule, EXCLUDE_KEYS)
        if "mode" in rule:
            _list(src, f"exclude[{i}].mode", rule["mode"], str, list(MODES))
        if "workload" in rule:
            _list(src, f"exclude[{i}].workload", rule["workload"], str, list(WORKLOADS))

    seen: dict[str, Case] = {}
    for wl_name in workloads:
        workload = WORKLOADS[wl_name]
        table = sizes[wl_name]
        if not isinstance(table, dict):
            raise MatrixError(src, f"sizes.{wl_name}", table, "must be a table of named sizes")
        for size_name, dims in table.items():
            where = f"sizes.{wl_name}.{size_name}"
            if not isinstance(dims, dict):
                raise MatrixError(src, where, dims, "must be a table of dimensions")
            overrides = {k: v for k, v in dims.items() if k in Settings.field_names()}
            shape = {k: v for k, v in dims.items() if k not in overrides}
            settings = _settings(src, where, overrides, base)
            try:
                from tebench.workloads.base import size_from_dict

                spec = size_from_dict(workload.size_type, shape, where)
                workload.check(spec)
            except SizeError as exc:
                message = str(exc).split(": ", 1)[-1] if str(exc).startswith(where) else str(exc)
                raise MatrixError(src, f"{where}.{exc.key}", exc.value, message) from None
            dim_items = tuple(dataclasses.asdict(spec).items())
            for mode_name, g, w, par in itertools.product(modes, graphs, fp8_weights, parallel):
                mode = MODES[mode_name]
                if w and not mode.fp8:
                    continue  # FP8 weights only exist under FP8
                for n in (nprocs if par != "single" else [1]):
                    for opts in (fp8_points if mode.fp8 else [None]):
                        case = Case(wl_name, size_name, mode_name, dim_items, opts, g, w, par, n, settings)
                        if any(_matches(rule, case) for rule in rules):
                            continue
                        seen.setdefault(case.id, case)
    yield from seen.values()


def reference_order(cases: list[Case]) -> list[Case]:
    """Cases in matrix order, but with each group's reference mode first.

    Parity compares against the reference, so running it first lets the
    runner judge every later case as soon as it finishes.
    """
    from tebench.modes import REFERENCE_MODES

    def rank(case: Case) -> int:
        return REFERENCE_MODES.index(case.mode) if case.mode in REFERENCE_MODES else len(REFERENCE_MODES)

    groups: dict[tuple, list[Case]] = {}
    for case in cases:
        groups.setdefault((case.workload, case.size), []).append(case)
    return [c for group in groups.values() for c in sorted(group, key=rank)]
