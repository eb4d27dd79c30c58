"""Read what a report is made of: tebench results files and pytest-benchmark JSON.

Both become :class:`Source` objects holding result records in tebench's
schema, so everything downstream handles one shape. A source is labelled by
the device it ran on; two sources from the same device model get their file's
name appended, so a side-by-side comparison always has distinct columns.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tebench import bounded
from tebench.analysis import judged_run
from tebench.plan import record_checks
from tebench.store import reader as results
from tebench.schema.text import check_text
from tebench.schema.version import RecordError
from tebench.schema.environment import Environment
from tebench.schema.records import MAX_STEP_MS, MIN_STEP_MS, CaseResult, FP8Options, RunHeader, Summary, Throughput
from tebench.schema.version import SchemaError
from tebench.schema.records import Case
from tebench.workloads.modules_spec import ModuleSpec


@dataclass
class Source:
    """One results file (or pytest-benchmark file) in a report."""

    path: str
    kind: str
    """``tebench`` or ``pytest-benchmark``."""
    header: RunHeader
    records: list[CaseResult]
    label: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def env(self) -> Environment:
        return self.header.environment

    @property
    def device(self) -> str:
        return self.header.device


_PB_WHAT = "pytest-benchmark JSON file"


def _pytest_benchmark(path: Path) -> dict[str, Any] | None:
    """The parsed file if ``path`` is pytest-benchmark output (a ``*.json`` object with ``benchmarks``
    and ``machine_info``), else None (it is then read as a tebench results file).

    Read with bounds: a FIFO or a device named ``*.json`` is refused (bounded.InputError), and a
    file over the pytest-benchmark limit is parsed only if its start does not look like one.
    """
    if path.suffix != ".json" or path.is_dir():
        return None
    try:
        st = bounded.check_file(path, "results file")
    except FileNotFoundError:
        return None  # the results reader says so, as for any other missing file
    if st.st_size > bounded.BENCHMARK_JSON_MAX_BYTES:
        head = bounded.read_head(path, _PB_WHAT, bounded.SNIFF_BYTES)
        if b'"machine_info"' in head or b'"benchmarks"' in head:
            bounded.check_file(path, _PB_WHAT, bounded.BENCHMARK_JSON_MAX_BYTES)  # raises: names the limit
        return None
    try:
        data = json.loads(bounded.read_bytes(path, _PB_WHAT, bounded.BENCHMARK_JSON_MAX_BYTES))
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and "benchmarks" in data and "machine_info" in data else None


_PB_MIN_S = MIN_STEP_MS / 1000.0
"""The shortest time a pytest-benchmark round may have (s): a record's shortest step time; 0 is damage."""
_PB_MAX_S = MAX_STEP_MS / 1000.0
"""The longest time a pytest-benchmark round may have (s): a record's longest step time; longer is damage
(1e306 s overflowed to inf as milliseconds)."""


def _check_benchmark(bench: Any, where: str) -> None:
    """SchemaError unless one pytest-benchmark entry has what a record is built from."""
    def bad(key: str, value: Any, why: str) -> SchemaError:
        return SchemaError(f"{where}.{key} = {value!r:.80}: {why}")

    if not isinstance(bench, dict):
        raise SchemaError(f"{where}: must be an object, not {type(bench).__name__}")
    info = bench.get("extra_info", {})
    if not isinstance(info, dict):
        raise bad("extra_info", info, "must be an object")
    if "module" not in info:
        return  # not one of tebench's module benchmarks: ignored
    for key in ("module", "mode"):
        if key not in info:
            raise bad(f"extra_info.{key}", None, "missing: a module benchmark says which module and mode it timed")
        if not isinstance(info[key], str):
            raise bad(f"extra_info.{key}", info[key], "must be a string")
    if not isinstance(bench.get("name", ""), str) or not isinstance(bench.get("fullname", ""), str):
        raise bad("name", bench.get("name"), "must be a string")
    if not (bench.get("fullname") or bench.get("name")):
        raise bad("name", bench.get("name"), "missing, and no fullname either: the report names each benchmark")
    try:
        # A lone surrogate (JSON's "\ud800") in a name or module cannot be drawn or written as UTF-8.
        check_text(bench)
    except RecordError as exc:
        raise SchemaError(f"{where}: {exc}") from None
    if info.get("fp8") is not None:
        try:
            FP8Options.from_dict(info["fp8"])
        except RecordError as exc:
            raise bad("extra_info.fp8", info["fp8"], f"not FP8 options ({exc})") from None
    for key in ("tokens", "flops", "hidden"):
        value = info.get(key, 0)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value < 0):
            raise bad(f"extra_info.{key}", value, "must be a finite number >= 0")
    if not isinstance(info.get("env", {}), dict) or not isinstance(info.get("env", {}).get("gpus", []), list):
        raise bad("extra_info.env", info.get("env"), "must be an object with a gpus array")
    stats_ = bench.get("stats")
    if not isinstance(stats_, dict):
        raise bad("stats", stats_, "must be an object")
    data = stats_.get("data")
    if not isinstance(data, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                             and math.isfinite(v) and _PB_MIN_S <= v <= _PB_MAX_S for v in data):
        raise bad("stats.data", data, f"must be an array of times in seconds, each from {_PB_MIN_S:g} to "
                                      f"{_PB_MAX_S:g} (a step takes time)")
    if not data:
        raise SchemaError(f"{where} ({bench.get('name')!r:.80}): stats.data is empty: no step times to report "
                          "(run pytest with --benchmark-json from pytest-benchmark 3.1 or later, which "
                          "stores every round's time)")


def _first_env(path: Path, benchmarks: list[Any]) -> dict[str, Any]:
    """The first benchmark's ``extra_info.env`` (the machine the file was timed on), checked where it is
    read: tebench's own benchmarks were checked by :func:`_check_benchmark`, but a foreign first entry
    (no ``extra_info.module``) was not. Not an object, or a ``gpus`` that is not an array: SchemaError
    naming the file and key."""
    if not benchmarks:
        return {}
    info = benchmarks[0].get("extra_info", {})
    env = info.get("env", {}) if isinstance(info, dict) else {}
    where = f"{path}: benchmarks[0].extra_info.env"
    if not isinstance(env, dict):
        raise SchemaError(f"{where} = {env!r:.80}: must be an object")
    if not isinstance(env.get("gpus", []), list):
        raise SchemaError(f"{where}.gpus = {env.get('gpus')!r:.80}: must be an array")
    return env  # each GPU is checked with the header built from it (benchmarks[0].extra_info: [env.gpus[0]] …)


def _from_pytest_benchmark(path: Path, data: dict[str, Any]) -> Source:
    """Module benchmarks from ``pytest benchmarks/ --benchmark-json=FILE``.

    Each benchmark's ``extra_info`` (written by ``benchmarks/test_modules.py``)
    says which module, mode and shape it timed; its stats become a record.
    A malformed file is refused with SchemaError naming the entry and key.
    """
    if not isinstance(data.get("benchmarks"), list) or not isinstance(data.get("machine_info"), dict):
        raise SchemaError(f"{path}: pytest-benchmark file needs a 'benchmarks' array and a 'machine_info' object")
    for i, bench in enumerate(data["benchmarks"]):
        _check_benchmark(bench, f"{path}: benchmarks[{i}]")
    if not isinstance(data["machine_info"].get("cpu", {}), dict):
        raise SchemaError(f"{path}: machine_info.cpu must be an object")
    machine = data.get("machine_info", {})
    # Checked here, under the names they have in this file: the header built from them names its own keys.
    for where, value in (("machine_info.cpu.brand_raw", machine.get("cpu", {}).get("brand_raw")),
                         ("machine_info.processor", machine.get("processor")),
                         ("machine_info.node", machine.get("node")),
                         ("machine_info.python_version", machine.get("python_version")),
                         ("datetime", data.get("datetime"))):
        if value is not None and not isinstance(value, str):
            raise SchemaError(f"{path}: {where} = {value!r:.80}: must be a string")
    extra_env = _first_env(path, data["benchmarks"])
    env = {
        "device_type": extra_env.get("device_type", "cpu"),
        "gpus": extra_env.get("gpus", []),
        "cpu": machine.get("cpu", {}).get("brand_raw", machine.get("processor", "")),
        "python": machine.get("python_version"),
        "torch": extra_env.get("torch"),
        "te": extra_env.get("te"),
        "cuda": extra_env.get("cuda"),
        "driver": extra_env.get("driver"),
        "hostname": machine.get("node"),
        "peak_tflops": extra_env.get("peak_tflops"),
    }
    try:
        machine_env = cast(RunHeader, results.parse_record({"type": "header", "env": env})).environment
    except RecordError as exc:
        raise SchemaError(f"{path}: benchmarks[0].extra_info: {exc}") from None
    records = []
    first: dict[str, int] = {}
    for i, bench in enumerate(data.get("benchmarks", [])):
        if "module" not in bench.get("extra_info", {}):
            continue
        try:
            record = _module_record(bench, machine_env)
        except RecordError as exc:
            # The record's own key paths (case.dims.hidden, throughput.tokens_per_step) come from extra_info.
            raise SchemaError(f"{path}: benchmarks[{i}].extra_info: {exc}") from None
        # Two entries of one case would be pooled as two rounds of it: a median of two different benchmarks.
        j = first.setdefault(record.case_id, i)
        if j != i:
            raise SchemaError(f"{path}: benchmarks[{i}] ({bench.get('name')!r:.80}) times the same case as "
                              f"benchmarks[{j}] ({data['benchmarks'][j].get('name')!r:.80}): {record.case_id}; "
                              "a module benchmark's module, mode, FP8 options, hidden size and tokens name its case")
        records.append(record)
    if not records:
        raise SchemaError(f"{path}: none of its {len(data['benchmarks'])} benchmark(s) is one of tebench's module "
                          "benchmarks (extra_info.module, as benchmarks/test_modules.py writes): nothing to report")
    header = {"type": "header", "run_id": path.stem, "created": data.get("datetime"), "env": env,
              "command": ["pytest", "benchmarks/", f"--benchmark-json={path.name}"],
              "matrix": {"name": "pytest-benchmark module suite", "source": str(path)}}
    return Source(str(path), "pytest-benchmark", RunHeader.from_dict(header), records)


def _module_record(bench: dict[str, Any], machine_env: Environment) -> CaseResult:
    """The case record of one of tebench's module benchmarks (checked by :func:`_check_benchmark`)."""
    info = bench["extra_info"]
    samples = [v * 1000.0 for v in bench["stats"]["data"]]
    summary = Summary.of(samples).to_dict()
    tokens, flops = info.get("tokens", 0), info.get("flops", 0.0)
    case = {
        "workload": ModuleSpec.name, "size": f"{info['module']}.h{info.get('hidden')}.t{tokens}",
        "mode": info["mode"], "dims": {"module": info["module"], "hidden": info.get("hidden"),
                                               "tokens": tokens},
        "fp8": info.get("fp8"), "graphs": False, "fp8_weights": False, "parallel": "single", "nproc": 1,
        "settings": {},
    }
    record_checks.check_case(case)  # a mode and an FP8 recipe this tebench knows, as a results file's
    throughput = Throughput.of(summary["median"], tokens, flops, machine_env.peak_tflops)
    record = {
        "type": "case", "case_id": Case.from_dict(case, "case").id, "round": 0, "case": case,
        "benchmark": bench.get("fullname") or bench["name"],
        "status": "ok", "reason": None, "device": {"name": machine_env.gpu.name if machine_env.gpu else "cpu"},
        "timing": {"samples_ms": samples, "stats": summary, "timer": "pytest-benchmark (forward+backward)"},
        "throughput": throughput,
    }
    return CaseResult.from_dict(record)


def load(path: str | Path, rejudge: bool = False) -> Source:
    """Load one results file, run directory or pytest-benchmark JSON file (parity: as
    :func:`judged_run.read` judges it; every verdict again with ``rejudge``)."""
    p = Path(path)
    bench = _pytest_benchmark(p)
    if bench is not None:
        return _from_pytest_benchmark(p, bench)
    # Every round of each case (the report pools their samples), but only the
    # last record of a (case, round) pair; parity judged over them where not of these rules.
    run = judged_run.read(p, rejudge=rejudge)
    src = Source(run.path, "tebench", run.header, run.cases)
    if run.problems:
        src.notes.append(f"{len(run.problems)} unreadable line(s) skipped (a run killed mid-write?)")
    planned = set(run.header.case_ids or [])
    missing = sorted(planned - {r.case_id for r in run.cases})
    if missing:
        src.notes.append(f"{len(missing)} planned case(s) have no result yet (partial run): "
                         + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    return src


def load_all(paths: list[str | Path], rejudge: bool = False) -> list[Source]:
    """Load several sources (see :func:`load`) and give each a distinct label."""
    sources = [load(p, rejudge) for p in paths]
    counts = Counter(s.device for s in sources)
    for s in sources:
        # Several files from one device model are files, not machines: name each by its file, which the
        # reader can find, not by a run id (a timestamp and a hash that say nothing at a glance).
        s.label = s.device if counts[s.device] == 1 else f"{s.device}, {file_name(s.path)}"
    labels = Counter(s.label for s in sources)
    for i, s in enumerate(sources):
        if labels[s.label] > 1:
            s.label = f"{s.label} #{i + 1}"
    return sources


def file_name(path: str | Path) -> str:
    """A results file as a label: its name, with its folder where the name alone says little
    (``results.jsonl`` of ``runs/a`` and of ``runs/b``)."""
    p = Path(path)
    return f"{p.parent.name}/{p.name}" if p.stem in ("results", "report") and p.parent.name else p.name
