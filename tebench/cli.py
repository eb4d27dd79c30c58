"""The ``tebench`` command line: a thin layer over plain functions.

Each subcommand parses its arguments and calls a function that tests call
directly. Bad input (a broken matrix, an unknown preset, an unreadable results
file) exits with status 2 and a message that names the file, key and value.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from tebench import __version__

EXIT_BAD_INPUT = 2
# Far beyond any real use; they bound what a typo (an extra zero or ten) can allocate.
MAX_ROUNDS = 1000
MAX_SHARDS = 10_000


class UsageError(Exception):
    """Bad input: reported on stderr, exit status 2."""


def _add_matrix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("matrix", nargs="?", help="a matrix file (TOML); default: --preset auto")
    from tebench.matrix import preset_names  # torch-free; the list is the presets directory's

    p.add_argument("--preset", help="a shipped preset: auto (smoke on CPU, tutorial on a GPU), "
                   + ", ".join(preset_names()))
    p.add_argument("--only", action="append", default=[], metavar="GLOB",
                   help="run only cases whose id matches (repeatable), e.g. 'gpt/*/TE-*'")
    p.add_argument("--shard", metavar="I/N", help="run shard I of N (cost-balanced, deterministic)")


def _load_matrix(args: argparse.Namespace, env: Any = None):
    from tebench import matrix

    if args.matrix and args.preset:
        raise UsageError("give a matrix file or --preset, not both")
    if args.matrix:
        return matrix.load(args.matrix)
    name = args.preset or "auto"
    if name == "auto":
        if env is None:
            from tebench.detect import probe

            env = probe()
        name = "tutorial" if env.device_type == "cuda" else "smoke"
    return matrix.load(name, is_preset=True)


def _is_auto(args: argparse.Namespace) -> bool:
    """Whether the matrix depends on the hardware (``--preset auto``, the default)."""
    return not args.matrix and (args.preset or "auto") == "auto"


def _shard(args: argparse.Namespace) -> tuple[int, int] | None:
    from tebench import shard

    spec = shard.parse(args.shard) if args.shard else None
    if spec and spec[1] > MAX_SHARDS:
        raise UsageError(f"--shard {args.shard}: at most {MAX_SHARDS} shards")
    return spec


def cmd_env(args: argparse.Namespace) -> int:
    """Print what was detected and what each mode and recipe would do here."""
    from tebench.detect import probe
    from tebench.modes import FP8_MODES, MODES
    from tebench.recipes import RECIPES

    env = probe()
    if args.json:
        print(json.dumps(env.to_dict(), indent=2))
        return 0
    rows = [
        ("device", env.device_name),
        ("GPUs", ", ".join(f"{g.index}: {g.name} (CC {g.capability[0]}.{g.capability[1]}, "
                           f"{g.memory_bytes / 2**30:.0f} GiB)" for g in env.gpus) or "none"),
        ("driver / CUDA / cuDNN", f"{env.driver or '-'} / {env.cuda or '-'} / {env.cudnn or '-'}"),
        ("torch", env.torch),
        ("Transformer Engine", env.te or f"not importable: {env.te_error}"),
        ("torch.compile", "yes" if env.compile.ok else f"no: {env.compile.reason}"),
        ("peak (dense BF16)", f"{env.peak_tflops['bf16']} TFLOP/s ({env.peak_tflops['source']})"
         if env.peak_tflops else "unknown GPU: no MFU"),
        ("Python / CPU", f"{env.python} / {env.cpu} x{env.cpu_count}"),
        ("tebench", f"{env.tebench} ({env.git_commit or 'not a git checkout'}{' dirty' if env.git_dirty else ''})"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print("\nmodes:")
    for mode in MODES.values():
        reason = mode.gate(env)
        print(f"  {mode.name:<15} {'runs' if not reason else 'skipped: ' + reason}")
    fp8_mode = MODES[FP8_MODES[0]]  # every FP8 mode gates on the same FP8 support
    print(f"FP8 recipes ({', '.join(FP8_MODES)}):")
    for spec in RECIPES.values():
        reason = fp8_mode.gate(env) or spec.gate(env)
        print(f"  {spec.name:<15} {'runs' if not reason else 'skipped: ' + reason}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Expand a matrix and show every case with run/skip and the reason, running nothing."""
    from tebench.detect import probe
    from tebench.gates import gate_case
    from tebench.matrix import exclusion_text, expand
    from tebench.runner import select_cases
    from tebench.shard import estimate_cost

    # The matrix is validated before the hardware is probed: bad input fails fast.
    mat = None if _is_auto(args) else _load_matrix(args)
    shard_spec = _shard(args)
    env = probe(cached=True)
    mat = mat or _load_matrix(args, env)
    cases = select_cases(mat, args.only, shard_spec)
    runs = 0
    print(f"matrix {mat.name} ({mat.source}), {len(cases)} case(s) on {env.device_name}")
    for case in cases:
        reason = gate_case(case, env)
        runs += reason is None
        status = "run " if reason is None else "skip"
        print(f"  {status} {case.id:<60} ~{estimate_cost(case):5.0f}s" + (f"  {reason}" if reason else ""))
    print(f"{runs} to run, {len(cases) - runs} skipped")
    excluded = expand(mat).excluded
    if excluded:
        print(f"excluded by the matrix's [[exclude]] rules ({sum(e.cases for e in excluded)} case(s)):")
        for rule in excluded:
            print(f"  - {exclusion_text(rule.to_dict())}")
    return 0


def _check_run_args(args: argparse.Namespace) -> tuple[list[str] | None, tuple[int, int] | None]:
    """UsageError for run options that are wrong on any machine; returns (devices, shard)."""
    if not 1 <= args.rounds <= MAX_ROUNDS:
        raise UsageError(f"--rounds must be at least 1 and at most {MAX_ROUNDS}, not {args.rounds}")
    if args.timeout is not None:
        from tebench.fields import FieldError, check_value
        from tebench.matrix import Settings

        try:  # the same limits as a matrix file's timeout_s
            check_value(Settings, "timeout_s", args.timeout)
        except FieldError as exc:
            raise UsageError(f"--timeout {args.timeout}: {exc} (seconds)") from None
    devices = [d.strip() for d in args.devices.split(",")] if args.devices else None
    if devices and not all(d.isdigit() for d in devices):
        raise UsageError(f"--devices {args.devices}: expected comma-separated GPU indices, e.g. 0,1")
    _check_launch_args(args)
    return devices, _shard(args)


def cmd_run(args: argparse.Namespace) -> int:
    """Run a matrix, write results.jsonl as cases finish, then a report."""
    from tebench.detect import probe

    # Everything that can be checked without the hardware is checked first.
    devices, shard_spec = _check_run_args(args)
    mat = None if _is_auto(args) else _load_matrix(args)
    from tebench import runner  # numpy and the rest: only once the input is known to be good

    if mat is not None and not runner.select_cases(mat, args.only, shard_spec):
        raise UsageError("no case of the matrix matches --only / --shard")  # before the probe, too
    compile_cache = _compile_cache(args.compile_cache)  # created now: only for input known to be good
    runner.check_out_dir(Path(args.out))
    with runner.lock_out(Path(args.out)):
        pass  # refuse at once if another run holds OUT; run() takes the lock for good after the probe
    env = probe()
    mat = mat or _load_matrix(args, env)
    if devices and env.device_type == "cuda":
        bad = [d for d in devices if not d.isdigit() or int(d) >= len(env.gpus)]
        if bad:
            raise UsageError(f"--devices {args.devices}: no such GPU {bad} ({len(env.gpus)} visible)")
    opts = runner.RunOptions(
        out=Path(args.out), rounds=args.rounds, resume=args.resume, timeout_s=args.timeout,
        devices=devices, shard=shard_spec, only=args.only,
        live=False if args.quiet else None, command=["tebench", *sys.argv[1:]],
        launch=args.launch, compile_cache=compile_cache, prestart_depth=args.prestart_depth,
        pause=not args.no_pause,
    )
    path = runner.run(mat, env, opts)
    from tebench import record

    # Parity judged again over the whole run, as the report judges it: --strict and the report agree.
    run = record.read(path)
    print(f"\nresults: {path}")
    if not args.no_report:
        from tebench.report import render

        out = render([path], Path(args.out) / "report")
        print(f"report:  {out / 'index.html'}\n         {out / 'report.md'}")
    # An inconclusive verdict is not a pass: --strict fails on it too (CaseResult.problem).
    bad = run.problem_cases
    if bad:
        print(f"{len(bad)} case(s) not ok, failing or inconclusive on loss parity:", file=sys.stderr)
        for r in bad:
            print(f"  {r.status:<8} {r.case_id}: {r.why}", file=sys.stderr)
    return 1 if (bad and args.strict) else 0


def cmd_report(args: argparse.Namespace) -> int:
    """Render HTML and Markdown from stored results (tebench results or pytest-benchmark JSON)."""
    import time

    from tebench.report import render

    url = args.assets_url
    if url is not None and not re.match(r"^https?://[^\s/]+\S*$", url):
        raise UsageError(f"--assets-url {url!r}: not an absolute http(s) URL (a PR comment cannot show relative "
                         "image paths)")
    t0 = time.perf_counter()
    out = render(args.results, Path(args.out), assets_url=url)
    print(f"report: {out / 'index.html'}\n        {out / 'report.md'}  ({time.perf_counter() - t0:.1f} s)")
    return 0


def _thresholds(items: list[str]) -> dict[str, float]:
    from tebench.compare import CompareError, parse_thresholds

    try:
        return parse_thresholds(items)
    except CompareError as exc:
        raise UsageError(str(exc)) from None


def _compare_options(args: argparse.Namespace, count_env_changes: bool):
    from tebench.compare import CompareError, Options

    try:
        return Options(thresholds=_thresholds(args.threshold), alpha=args.alpha, correction=args.correction,
                       min_rounds=args.min_rounds, gate_launch_bound=args.gate_launch_bound,
                       fail_on_missing=args.fail_on_missing, count_env_changes=count_env_changes)
    except CompareError as exc:
        raise UsageError(str(exc)) from None


def _add_gate_args(p: argparse.ArgumentParser) -> None:
    from tebench.compare import CORRECTIONS, DEFAULT_ALPHA
    from tebench.stats import MIN_ROUNDS

    p.add_argument("--threshold", action="append", default=[], metavar="METRIC=VALUE",
                   help="regression threshold per metric, as a percentage (time=5%%) or a fraction below 1 "
                   "(time=0.05): time, memory (default 5%%), loss (default 10%%)")
    p.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                   help="error rate across all cases of the comparison (default %(default)s)")
    p.add_argument("--correction", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison control across cases: holm (family-wise) or bh (false discovery)")
    p.add_argument("--min-rounds", type=int, default=MIN_ROUNDS,
                   help="rounds per side below which step time is inconclusive (default %(default)s)")
    p.add_argument("--gate-launch-bound", action="store_true",
                   help="count step-time regressions of launch-bound cases (GPU busy < 50%%), advisory by default")
    p.add_argument("--fail-on-missing", action="store_true", help="a case in base but not in head fails the gate")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")


def _emit(text: str, out: str | None, markdown: bool) -> None:
    import os

    if out:
        from tebench import atomic

        atomic.write_text(out, text + "\n")
    else:
        print(text)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and markdown:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare BASE and HEAD; exit 1 on a regression beyond threshold and noise."""
    from tebench.compare import CompareError, compare, to_markdown

    opts = _compare_options(args, args.count_env_changes)
    try:
        result = compare(args.base, args.head, opts=opts)
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    # Strict JSON (null for NaN/inf): what jq, browsers and other languages accept.
    text = strict_json(result.to_json()) if args.format == "json" else to_markdown(result)
    _emit(text, args.out, args.format == "markdown")
    _nothing_measured(result, "tebench compare")
    return result.exit_code


def cmd_ab(args: argparse.Namespace) -> int:
    """Run base and head interleaved (ABBA) on one device, compare round by round; exit 1 on a regression."""
    from tebench import ab
    from tebench.compare import to_markdown

    if args.matrix and args.preset:
        raise UsageError("give a matrix file or --preset, not both")
    try:
        opts = ab.ABOptions(
            out=Path(args.out), rounds=args.rounds,
            base=ab.SideSpec(args.base_python or sys.executable, ab.parse_env(args.base_env, "--base-env")),
            head=ab.SideSpec(args.head_python or sys.executable, ab.parse_env(args.head_env, "--head-env")),
            device=args.device, only=args.only, timeout_s=args.timeout, live=False if args.quiet else None,
            command=["tebench", *sys.argv[1:]], compare=_compare_options(args, True),
            launch=args.launch, prestart_depth=_check_launch_args(args),
            pause=not args.no_pause)
        if not 1 <= args.rounds <= MAX_ROUNDS:
            raise ab.ABError(f"--rounds must be at least 1 and at most {MAX_ROUNDS}, not {args.rounds}")
        if args.device is not None and not args.device.isdigit():
            raise ab.ABError(f"--device {args.device}: expected one GPU index, e.g. 0")
        mat = _load_matrix(args)
        opts.compile_cache = _compile_cache(args.compile_cache)  # created only for input known to be good
        result = ab.run(mat, opts)
    except ab.ABError as exc:
        raise UsageError(str(exc)) from None
    text = strict_json(result.to_json()) if args.format == "json" else to_markdown(result, title="tebench ab")
    print(f"\nbase:    {opts.out / 'base' / 'results.jsonl'}\nhead:    {opts.out / 'head' / 'results.jsonl'}\n"
          f"compare: {opts.out / 'compare.md'}\n         {opts.out / 'compare.json'}\n", file=sys.stderr)
    _emit(text, None, args.format == "markdown")
    _nothing_measured(result, "tebench ab")
    return result.exit_code


def _nothing_measured(result: Any, prog: str) -> None:
    """Say why a comparison with no case measured on both sides exits 2."""
    from tebench.compare import UNMEASURED

    if not result.measured:
        kinds = ", ".join(f"{result.count(v)} {v}" for v in UNMEASURED if result.count(v))
        print(f"{prog}: error: no case was measured on both sides ({kinds or 'no cases'}); "
              "see the per-case reasons above", file=sys.stderr)


def strict_json(text: str) -> str:
    """Re-encode JSON text that may hold bare NaN/Infinity as strict JSON (null for them)."""
    from tebench.results import dumps_strict

    return dumps_strict(json.loads(text), indent=2)


SQLITE_MAGIC = b"SQLite format 3\x00"


def _check_db(db: str, must_exist: bool) -> None:
    """UsageError unless ``db`` is an SQLite database file (or, for ``add``, a new path)."""
    path = Path(db)
    if path.is_dir():
        raise UsageError(f"--db {db}: is a directory, not an SQLite database file")
    if not path.exists():
        if must_exist:
            raise UsageError(f"{db}: no such history database (create it with 'tebench history add')")
        return
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head and head != SQLITE_MAGIC:
        raise UsageError(f"--db {db}: not an SQLite database (it starts with {head[:8]!r})")


def cmd_history_add(args: argparse.Namespace) -> int:
    import sqlite3

    from tebench import history

    _check_db(args.db, must_exist=False)
    for path in args.results:
        try:
            added = history.add(args.db, path)
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"--db {args.db}: {exc}") from None
        state = "added" if added.new_run else ("updated" if added.new_cases else "already stored")
        print(f"{path}: run {added.run_id} {state} ({added.new_cases} new case record(s), {added.total_cases} in all)")
    return 0


def cmd_history_report(args: argparse.Namespace) -> int:
    from tebench import history

    _check_db(args.db, must_exist=True)
    if not 1 <= args.window <= MAX_ROUNDS:
        raise UsageError(f"--window {args.window}: must be 1 to {MAX_ROUNDS}")
    if args.confirm < 1:
        raise UsageError(f"--confirm {args.confirm}: must be at least 1")
    out = history.report(args.db, args.out, args.window, _thresholds(args.threshold), args.confirm)
    print(f"history: {out / 'history.html'}\n         {out / 'history.md'}")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    """Join shard run directories into one run (and render its report)."""
    from tebench.merge import MergeError, merge

    try:
        path, missing = merge(args.shards, Path(args.out))
    except MergeError as exc:
        raise UsageError(str(exc)) from None
    print(f"merged {len(args.shards)} shard(s) into {path}")
    if missing:
        print(f"missing shard(s): {', '.join(missing)}", file=sys.stderr)
    if not args.no_report:
        from tebench.report import render

        out = render([path], Path(args.out) / "report")
        print(f"report: {out / 'index.html'}")
    return EXIT_BAD_INPUT if (missing and args.require_complete) else 0


def _compile_cache(value: str) -> Path | None:
    """``--compile-cache``: a directory (created now: a cache that cannot be is bad input), ``default``
    ($TEBENCH_CACHE_DIR/compile, by default ~/.cache/tebench/compile) or ``off``."""
    if value == "off":
        return None
    from tebench import caches

    path = caches.default_dir() if value == "default" else Path(value).expanduser()
    try:
        caches.prepare(path)
    except OSError as exc:
        raise UsageError(f"--compile-cache {value}: cannot create {path} ({exc.strerror})") from None
    return path


def _check_launch_args(args: argparse.Namespace) -> int | None:
    """``--prestart-depth`` and ``--no-pause`` against ``--launch``; returns the depth (None: the default)."""
    value = args.prestart_depth
    if value is not None and not 1 <= value <= 8:
        raise UsageError(f"--prestart-depth {value}: expected 1 to 8 (pre-started workers per device)")
    if args.launch == "cold" and (value is not None or args.no_pause):
        given = f"--prestart-depth {value}" if value is not None else "--no-pause"
        raise UsageError(f"{given} applies to pre-started workers; --launch cold starts none")
    return value


def _add_cost_args(p: argparse.ArgumentParser) -> None:
    """What the harness itself costs on the machine: process starts and compile caches."""
    # A light module: --help stays fast.
    from tebench.worker import CPUS_PER_PRESTARTED_WORKER, LAUNCHES, MAX_AUTO_PRESTART_DEPTH

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


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command: one ``_add_<command>`` function each."""
    parser = argparse.ArgumentParser(
        prog="tebench",
        description="What Transformer Engine (BF16, FP8) buys over plain PyTorch, with loss parity.",
    )
    parser.add_argument("--version", action="version", version=f"tebench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_env, _add_list, _add_run, _add_report, _add_compare, _add_ab, _add_merge, _add_history):
        add(sub)
    return parser


def _add_env(sub: Any) -> None:
    p = sub.add_parser("env", help="show detected hardware/software and what each mode would do")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_env)


def _add_list(sub: Any) -> None:
    p = sub.add_parser("list", help="expand a matrix: every case, run or skip, and why")
    _add_matrix_args(p)
    p.set_defaults(func=cmd_list)


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run a matrix and write results (and a report)")
    _add_matrix_args(p)
    p.add_argument("--out", required=True, help="run directory (results.jsonl, logs/, report/)")
    p.add_argument("--rounds", type=int, default=1, help="repeat the matrix R times, interleaved")
    p.add_argument("--resume", action="store_true", help="continue a killed run in --out")
    p.add_argument("--timeout", type=float, help="per-case wall-clock limit in seconds (overrides the matrix)")
    p.add_argument("--devices", help="comma-separated GPU indices: one case per GPU at a time")
    p.add_argument("--no-report", action="store_true", help="do not render the report at the end")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any case is not ok (skips excepted), fails loss parity or is inconclusive")
    p.add_argument("--quiet", action="store_true", help="no live progress line")
    _add_cost_args(p)
    p.set_defaults(func=cmd_run)


def _add_report(sub: Any) -> None:
    p = sub.add_parser("report", help="render HTML + Markdown from stored results (no GPU, no re-run)")
    p.add_argument("results", nargs="+", help="results.jsonl files, run directories or pytest-benchmark JSON; "
                   "several from different machines are compared side by side")
    p.add_argument("--out", required=True, help="directory for index.html, report.md and chart PNGs")
    p.add_argument("--assets-url", metavar="URL",
                   help="absolute URL the chart PNGs will be published at (a branch, Pages): report.md then shows "
                        "them from there; without it report.md has no images and reads whole as text")
    p.set_defaults(func=cmd_report)


def _add_compare(sub: Any) -> None:
    p = sub.add_parser("compare", help="compare two runs: regressions beyond threshold and noise (exit 1)")
    p.add_argument("base", help="base results file or run directory")
    p.add_argument("head", help="head results file or run directory")
    _add_gate_args(p)
    p.add_argument("--out", help="write to this file instead of stdout")
    p.add_argument("--count-env-changes", action="store_true",
                   help="count regressions even when base and head ran in different environments")
    p.set_defaults(func=cmd_compare)


def _add_ab(sub: Any) -> None:
    p = sub.add_parser("ab", help="run base and head interleaved (ABBA) on one device and compare (exit 1)")
    p.add_argument("matrix", nargs="?", help="a matrix file (TOML); default: --preset auto")
    p.add_argument("--preset", help="a shipped preset, as for run")
    p.add_argument("--only", action="append", default=[], metavar="GLOB", help="run only matching cases")
    p.add_argument("--out", required=True, help="directory for base/, head/, compare.md and compare.json")
    p.add_argument("--rounds", type=int, default=5, help="rounds per side (default %(default)s; at least "
                   "3 are needed for a verdict)")
    p.add_argument("--base-python", metavar="PY", help="interpreter of the base side (default: this one)")
    p.add_argument("--head-python", metavar="PY", help="interpreter of the head side (default: this one)")
    p.add_argument("--base-env", action="append", default=[], metavar="K=V", help="environment variable "
                   "for the base side's cases (repeatable)")
    p.add_argument("--head-env", action="append", default=[], metavar="K=V", help="environment variable "
                   "for the head side's cases (repeatable)")
    p.add_argument("--device", help="GPU index both sides run on (default: the default device)")
    p.add_argument("--timeout", type=float, help="per-case wall-clock limit in seconds (overrides the matrix)")
    p.add_argument("--quiet", action="store_true", help="no live progress line")
    _add_cost_args(p)
    _add_gate_args(p)
    p.set_defaults(func=cmd_ab)


def _add_merge(sub: Any) -> None:
    p = sub.add_parser("merge", help="join shard results (tebench run --shard I/N) into one run")
    p.add_argument("shards", nargs="+", help="shard run directories or results files")
    p.add_argument("--out", required=True, help="directory for the merged results.jsonl and report/")
    p.add_argument("--require-complete", action="store_true", help="exit 2 when a shard is missing")
    p.add_argument("--no-report", action="store_true")
    p.set_defaults(func=cmd_merge)


def _add_history(sub: Any) -> None:
    p = sub.add_parser("history", help="nightly history in SQLite: add runs, render trends")
    hsub = p.add_subparsers(dest="history_command", required=True, metavar="ACTION")
    h = hsub.add_parser("add", help="store results in the database (idempotent, safe concurrently)")
    h.add_argument("results", nargs="+", help="results files or run directories")
    h.add_argument("--db", required=True, help="SQLite database file (created if missing)")
    h.set_defaults(func=cmd_history_add)
    h = hsub.add_parser("report", help="trend charts, step changes, latest run vs recent baseline")
    h.add_argument("--db", required=True)
    h.add_argument("--out", required=True)
    h.add_argument("--window", type=int, default=5, help="how many earlier runs form the baseline")
    h.add_argument("--threshold", action="append", default=[], metavar="METRIC=VALUE",
                   help="as for compare: time=5%% or time=0.05")
    h.add_argument("--confirm", type=int, default=3,
                   help="runs that must follow a change before it is reported (default %(default)s)")
    h.set_defaults(func=cmd_history_report)


def _warn(message, category, filename, lineno, file=None, line=None) -> None:
    # Warnings (e.g. skipped damaged lines of a results file) are messages for
    # the user, not Python diagnostics: no source location.
    print(f"tebench: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tebench`` console script."""
    import warnings

    parser = build_parser()
    args = parser.parse_args(argv)  # --help and usage errors end here, before any other import

    from tebench.detect import ProbeError
    from tebench.errors import RunError
    from tebench.matrix import MatrixError
    from tebench.results import SchemaError
    from tebench.shard import ShardError
    warnings.showwarning = _warn
    try:
        return args.func(args)
    except (UsageError, MatrixError, SchemaError, RunError, ShardError, FileNotFoundError) as exc:
        print(f"tebench {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ProbeError as exc:
        print(f"tebench {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `tebench list | head`
        sys.stderr.close()
        return 0
    except OSError as exc:
        # A file that cannot be read or written (a full disk, a read-only
        # file system, a directory where a file is expected): say which.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"tebench {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
