"""What several commands share: matrix and gate arguments, option checks, output, bad input (exit 2)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any, Iterable

from tebench.analysis.defaults import DEFAULT_THRESHOLDS  # numpy-free: --help stays fast

EXIT_BAD_INPUT = 2


# Far beyond any real use; it bounds what a typo (an extra zero or ten) can allocate.
MAX_ROUNDS = 1000


class UsageError(Exception):
    """Bad input: reported on stderr, exit status 2."""


# ASCII only: str.isdigit() (and \d) accept '²' or '٣', which no CUDA_VISIBLE_DEVICES names.
# At most 9 digits: no machine has more GPUs, and int() refuses past 4,300 digits.
_DEVICE_INDEX = re.compile(r"[0-9]{1,9}")


def command_line() -> str:
    """This command as typed, for the holder line of a lock and the record of a run."""
    return shlex.join(["tebench", *sys.argv[1:]])


def _writable_dir(path: Path) -> bool:
    # access() also answers EROFS (a read-only mount), which permission bits do not show.
    return os.access(path, os.W_OK | os.X_OK)


def _try_create_under(existing: Path, flag: str, value: str) -> None:
    """UsageError unless a directory can really be made in ``existing``: access() says yes to root on
    /proc or a pseudo file system, where the later mkdir fails after the hardware was probed."""
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".tebench-check-", dir=existing))
    except OSError as exc:
        raise UsageError(f"{flag} {value}: cannot create it under {existing} ({exc.strerror or exc})") from None


def _try_create_file_in(parent: Path, flag: str, value: str) -> None:
    """UsageError unless a file can really be made in ``parent`` (the atomic write's temporary file
    goes there): as for a directory, access() says yes to root on /proc, and the failure would then
    name the temporary file instead of the option."""
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".tebench-check-", dir=parent)
    except OSError as exc:
        raise UsageError(f"{flag} {value}: cannot create a file in {parent} ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)


def check_out_arg(value: str, flag: str = "--out", kind: str = "dir") -> Path:
    """The path of an output option, refused (UsageError) before any probe or heavy import when it
    cannot be written: empty, a file where a directory is wanted (``kind="dir"``) or the reverse
    (``kind="file"``), or under a directory this process cannot write."""
    if not value.strip():
        raise UsageError(f"{flag} {value!r}: empty; give a {'directory' if kind == 'dir' else 'file'} "
                         "(an empty path would write into the current directory)")
    path = Path(value)
    if kind == "dir":
        if path.exists() and not path.is_dir():
            raise UsageError(f"{flag} {value}: is a file, not a directory")
        if path.is_dir():
            if not _writable_dir(path):
                raise UsageError(f"{flag} {value}: the directory is not writable")
            return path
        existing = path.parent
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise UsageError(f"{flag} {value}: cannot create it: {existing} is a file, not a directory")
        if not _writable_dir(existing):
            raise UsageError(f"{flag} {value}: cannot create it: {existing} is not writable")
        _try_create_under(existing, flag, value)
        return path
    if path.is_dir():
        raise UsageError(f"{flag} {value}: is a directory; give the file to write")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"{flag} {value}: no such directory {parent}")
    if not _writable_dir(parent):
        raise UsageError(f"{flag} {value}: the directory {parent} is not writable")
    _try_create_file_in(parent, flag, value)
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{flag} {value}: the file is not writable")
    return path


def refuse_inputs(targets: Iterable[Path], inputs: Iterable[str], flag: str, value: str) -> None:
    """UsageError if a file the command would write is one of its inputs (a run directory given as
    an input stands for its results file)."""
    from tebench.store.atomic import same_file
    from tebench.store.reader import results_path

    given = [(item, results_path(item)) for item in inputs]
    for target in targets:
        for item, path in given:
            if same_file(target, path):
                raise UsageError(f"{flag} {value}: would overwrite the input {item} ({path}); "
                                 "write somewhere else")


def parse_devices(value: str | None, flag: str = "--devices") -> list[str] | None:
    """``--devices 0,1``: distinct plain ASCII device indices (normalised: ``00`` is ``0``), or None."""
    if value is None:
        return None
    items = [d.strip() for d in value.split(",")]
    bad = [d for d in items if not _DEVICE_INDEX.fullmatch(d)]
    if bad:
        raise UsageError(f"{flag} {value}: expected comma-separated GPU indices, e.g. 0,1 "
                         f"({', '.join(repr(d) for d in bad)}: not a device index 0, 1, ...)")
    indices = [str(int(d)) for d in items]
    twice = sorted({d for d in indices if indices.count(d) > 1}, key=int)
    if twice:
        raise UsageError(f"{flag} {value}: GPU {', '.join(twice)} given more than once "
                         "(each device runs one case at a time)")
    return indices


def nonempty(flag: str) -> Any:
    """An argparse type refusing an empty or blank value (exit 2 naming ``flag``): ``--preset ''``
    must not fall back to the default, which probes the machine and runs the auto preset."""
    def check(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"{flag} {value!r}: empty; give a name (e.g. smoke) or leave the option out")
        return value

    check.__name__ = flag.lstrip("-")  # argparse names the type in its message
    return check


def add_matrix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("matrix", nargs="?", help="a matrix file (TOML); default: --preset auto")
    from tebench.plan.matrix import preset_names  # torch-free; the list is the presets directory's

    p.add_argument("--preset", type=nonempty("--preset"), help="a shipped preset: auto (smoke on CPU, tutorial on a GPU), "
                   + ", ".join(preset_names()))
    p.add_argument("--only", action="append", default=[], metavar="GLOB",
                   help="only the cases whose id matches (repeatable), e.g. 'gpt/*/TE-*'")
    p.add_argument("--shard", metavar="I/N", help="run shard I of N (cost-balanced, deterministic)")


def load_matrix(args: argparse.Namespace, env: Any = None):
    from tebench.plan import matrix

    if args.matrix and args.preset:
        raise UsageError("give a matrix file or --preset, not both")
    if args.matrix:
        return matrix.load(args.matrix)
    name = args.preset or "auto"
    if name == "auto":
        if env is None:
            from tebench.plan.environment import probe

            env = probe()
        name = "tutorial" if env.device_type == "cuda" else "smoke"
    return matrix.load(name, is_preset=True)


def select(mat: Any, only: list[str], shard_spec: tuple[int, int] | None, what: str = "--only / --shard") -> list:
    """The cases ``--only`` and ``--shard`` select from ``mat``; UsageError when none, naming each glob
    that matched nothing and the case ids close to it. A glob that matches nothing beside others that
    do is warned about: it is most likely a typo."""
    import warnings

    from tebench.plan.matrix import iter_cases
    from tebench.plan.schedule import select_cases, unmatched_only

    cases = select_cases(mat, only, shard_spec)
    unmatched = unmatched_only(list(iter_cases(mat)), only) if only else []
    if not cases:
        if unmatched:
            raise UsageError("; ".join(unmatched))
        detail = f": shard {shard_spec[0]}/{shard_spec[1]} of the selected cases is empty" if shard_spec else ""
        raise UsageError(f"no case of the matrix matches {what}{detail}")
    for line in unmatched:
        warnings.warn(line, stacklevel=2)
    return cases


def check_results_paths(paths: list[str]) -> None:
    """Refuse at once (exit 2) a results path that is missing, or is neither a run directory nor a
    regular file of at most the results-file limit: before the modules that read results are imported.

    A run directory stands for the file the reader reads in it (:func:`tebench.store.reader.results_path`:
    ``results.jsonl``, else ``results.jsonl.gz``, how a stored run is kept), so every command that
    takes results accepts the same folders the reader does."""
    from tebench import bounded
    from tebench.store.reader import RESULTS_NAME, results_path

    for given in paths:
        path = Path(given)
        file = results_path(path)
        try:
            bounded.check_file(file, "results file", bounded.RESULTS_MAX_BYTES)
        except FileNotFoundError:
            if path.is_dir():
                raise UsageError(f"{given}: no results file (neither {RESULTS_NAME} nor {RESULTS_NAME}.gz "
                                 f"in {path})") from None
            raise UsageError(f"{given}: no results file ({file} does not exist)") from None


def is_auto(args: argparse.Namespace) -> bool:
    """Whether the matrix depends on the hardware (``--preset auto``, the default)."""
    return not args.matrix and (args.preset or "auto") == "auto"


def parse_shard(args: argparse.Namespace) -> tuple[int, int] | None:
    from tebench.plan import shards as shard

    spec = shard.parse(args.shard) if args.shard else None
    if spec and spec[1] > shard.MAX_SHARDS:
        raise UsageError(f"--shard {args.shard}: at most {shard.MAX_SHARDS} shards")
    return spec


_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")
_FRACTION = re.compile(r"^\s*(0|0?\.[0-9]+)\s*$")


def parse_threshold(item: str) -> tuple[str, float]:
    """``METRIC=VALUE`` with VALUE a percentage (``3%``) or a fraction below 1 (``0.03``).

    A bare number of 1 or more (``time=3``: 3% or 300%?) is refused, as are
    negative, NaN and infinite values: a threshold must not be guessed.
    """
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep:
        raise UsageError(f"--threshold {item!r}: expected METRIC=VALUE, e.g. time=5% or time=0.05")
    if key not in DEFAULT_THRESHOLDS:
        raise UsageError(f"--threshold {item!r}: unknown metric {key!r} (known: {', '.join(DEFAULT_THRESHOLDS)})")
    if m := _PERCENT.match(value):
        out = float(m.group(1)) / 100.0
    elif _FRACTION.match(value):
        out = float(value)
    else:
        raise UsageError(f"--threshold {item!r}: value {value!r} is not a percentage (5%) or a fraction "
                         "below 1 (0.05); a bare number of 1 or more is ambiguous (time=3: 3% or 300%?), and negative, NaN "
                         "or infinite values are refused")
    return key, out


def parse_thresholds(items: Iterable[str]) -> dict[str, float]:
    """Every ``--threshold`` item; a metric given twice is refused."""
    out: dict[str, float] = {}
    for item in items:
        key, value = parse_threshold(item)
        if key in out:
            raise UsageError(f"--threshold {item!r}: {key} given twice")
        out[key] = value
    return out


def thresholds(items: list[str]) -> dict[str, float]:
    """Every ``--threshold METRIC=VALUE`` item (``compare``, ``ab``, ``history``); UsageError for a bad one."""
    return parse_thresholds(items)


def compare_options(args: argparse.Namespace, count_env_changes: bool):
    from tebench.analysis.compare import CompareError, Options

    # Options' own check speaks of its field (min_rounds); the user typed the option and a value.
    if args.min_rounds < 2:
        raise UsageError(f"--min-rounds {args.min_rounds}: must be at least 2 (a spread needs two values)")
    try:
        return Options(thresholds=thresholds(args.threshold), alpha=args.alpha, correction=args.correction,
                       min_rounds=args.min_rounds, gate_launch_bound=args.gate_launch_bound,
                       fail_on_missing=args.fail_on_missing, count_env_changes=count_env_changes,
                       fail_on_inconclusive=getattr(args, "fail_on_inconclusive", False))
    except CompareError as exc:
        raise UsageError(str(exc)) from None


def add_gate_args(p: argparse.ArgumentParser) -> None:
    from tebench.analysis.defaults import CORRECTIONS, DEFAULT_ALPHA, MIN_ROUNDS  # numpy-free: --help stays fast

    p.add_argument("--threshold", action="append", default=[], metavar="METRIC=VALUE",
                   help="regression threshold per metric, as a percentage (time=5%%) or a fraction below 1 "
                   "(time=0.05): time, memory, energy (energy per token; each default 5%%), loss (default 10%%)")
    p.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                   help="error rate across all cases of the comparison (default %(default)s)")
    p.add_argument("--correction", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison control across cases: holm (family-wise) or bh (false discovery)")
    p.add_argument("--min-rounds", type=int, default=MIN_ROUNDS,
                   help="rounds per side below which step time is inconclusive (default %(default)s)")
    p.add_argument("--gate-launch-bound", action="store_true",
                   help="count step-time regressions of launch-bound cases (GPU busy < 50%%), advisory by default")
    p.add_argument("--fail-on-missing", action="store_true", help="a case in base but not in head fails the gate")
    p.add_argument("--fail-on-inconclusive", action="store_true",
                   help="an inconclusive case (too few rounds, an interval beyond the threshold) fails the gate")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown",
                   help="markdown (a PR comment; the default) or json (every case's numbers, for a script)")


def add_rejudge_arg(p: argparse.ArgumentParser) -> None:
    """``--rejudge``, on every command that reads judged runs (report, compare, merge, history add)."""
    p.add_argument("--rejudge", action="store_true",
                   help="judge every loss-parity verdict again from the stored curves; without it a verdict "
                   "stored with this tebench's parity rules is taken as it is, and only older ones are judged")


def emit(text: str, out: str | None, markdown: bool) -> None:
    import os

    if out:
        from tebench.store import atomic

        atomic.write_text(out, text + "\n")
    else:
        print(text)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and markdown:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")


def nothing_measured(result: Any, prog: str) -> None:
    """Say why a comparison with no case measured on both sides exits 2."""
    from tebench.analysis.compare import UNMEASURED

    if not result.measured:
        kinds = ", ".join(f"{result.count(v)} {v}" for v in UNMEASURED if result.count(v))
        print(f"{prog}: error: no case was measured on both sides ({kinds or 'no cases'}); "
              "see the per-case reasons above", file=sys.stderr)


def strict_json(text: str) -> str:
    """Re-encode JSON text that may hold bare NaN/Infinity as strict JSON (null for them)."""
    from tebench.store.writer import dumps_strict

    return dumps_strict(json.loads(text), indent=2)


def compile_cache_dir(value: str) -> Path | None:
    """``--compile-cache``: a directory (created now: a cache that cannot be is bad input), ``default``
    ($TEBENCH_CACHE_DIR/compile, by default ~/.cache/tebench/compile) or ``off``."""
    if value == "off":
        return None
    from tebench.run import caches

    path = caches.default_dir() if value == "default" else Path(value).expanduser()
    try:
        caches.prepare(path)
    except OSError as exc:
        raise UsageError(f"--compile-cache {value}: cannot create {path} ({exc.strerror})") from None
    return path


def check_timeout(value: float | None) -> None:
    """``--timeout``: UsageError unless within the limits of a matrix file's ``timeout_s``."""
    if value is None:
        return
    from tebench.plan.matrix import Settings
    from tebench.schema.knobs import FieldError, check_value

    try:
        check_value(Settings, "timeout_s", value)
    except FieldError as exc:
        raise UsageError(f"--timeout {value}: {exc} (seconds)") from None


def check_launch_args(args: argparse.Namespace) -> int | None:
    """``--prestart-depth`` and ``--no-pause`` against ``--launch``; returns the depth (None: the default)."""
    value = args.prestart_depth
    if value is not None and not 1 <= value <= 8:
        raise UsageError(f"--prestart-depth {value}: expected 1 to 8 (pre-started workers per device)")
    if args.launch == "cold" and (value is not None or args.no_pause):
        given = f"--prestart-depth {value}" if value is not None else "--no-pause"
        raise UsageError(f"{given} applies to pre-started workers; --launch cold starts none")
    return value


def add_cost_args(p: argparse.ArgumentParser) -> None:
    """What the harness itself costs on the machine: process starts and compile caches."""
    # A light module: --help stays fast.
    from tebench.run.prestart import CPUS_PER_PRESTARTED_WORKER, LAUNCHES, MAX_AUTO_PRESTART_DEPTH

    p.add_argument("--launch", choices=LAUNCHES, default="auto",
                   help="how each case's process starts: prestarted (its worker imports torch/TE while the "
                        "previous case runs; one process per case still), cold, or auto (default: prestarted "
                        "on CUDA machines, cold on CPU-only ones)")
    p.add_argument("--prestart-depth", type=int, default=None, metavar="N",
                   help=f"with prestarted launches, start the workers of the next N cases per device, 1 to 8 "
                        f"(default: one per {CPUS_PER_PRESTARTED_WORKER} usable CPUs per device, 1 to "
                        f"{MAX_AUTO_PRESTART_DEPTH}; 4 on a 16-CPU host with one GPU; the header records it)")
    p.add_argument("--no-pause", action="store_true",
                   help="let pre-started workers run during the timed steps of launch-bound cases (by default "
                        "they are stopped then, so their imports take no host CPU from the case being timed)")
    p.add_argument("--compile-cache", default="default", metavar="DIR",
                   help="directory of the torch.compile/Triton/CUDA JIT caches every case shares, kept across "
                        "runs (CI can cache it); 'default' is $TEBENCH_CACHE_DIR/compile (~/.cache/tebench/compile), "
                        "'off' leaves torch's defaults. The header records whether it started cold or warm")

