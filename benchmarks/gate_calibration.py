"""Calibrate the regression gate on this machine: A/A false-positive rate and power against a slowdown.

Two ways, the same statistics (``tebench.analysis.compare``) for both:

``live``: runs ``tebench ab`` trials here. An A/A trial runs the same code on both
sides; a slowdown trial stretches every timed step of the head side by a known
factor (``TEBENCH_TEST_SLOWDOWN``, e.g. 1.05). Both sides get the hook (1.0 on
the base) so they are treated alike. Trials alternate A/A and slowdown, so
both see the same machine load.

``pool``: resamples stored rounds of *one code* (a long ``tebench ab --rounds 20``
A/A run, the A/A trials of ``live``, or a ``tebench run --rounds 40``) into
trials: pick ROUNDS pairs of rounds of a case (the two sides of one round of an
``ab`` run, which ran back to back; for plain runs, neighbours in time), compare
them (A/A), then again with the head's step times multiplied by the factor
(power). This makes a GPU calibration cheap: one long run,
thousands of trials. The trials share rounds, so they are not independent; the
intervals printed assume they are and are too narrow by an unknown amount,
the live trials' intervals are honest.

    python benchmarks/gate_calibration.py live --matrix M.toml --trials 10 --rounds 5 --out reports/x
    python benchmarks/gate_calibration.py pool runs/aa-long --rounds 5 --trials 2000 --out reports/x

Prints and writes (``--out``) the case-level false-positive rate (share of A/A
case comparisons judged ``regressed`` or ``improved``), the gate-level one
(share of A/A trials that would fail the gate), and the power (share of
slowdown case comparisons judged ``regressed``), each with a Wilson 95% interval.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tebench.analysis import compare  # noqa: E402
from tebench.cli.thresholds import parse_thresholds  # noqa: E402
from tebench.cli.usage import UsageError  # noqa: E402
from tebench.run import ab  # noqa: E402
from tebench.analysis import judged_run  # noqa: E402
from tebench.store import reader as results  # noqa: E402
from tebench.plan.matrix import load  # noqa: E402
from tebench.worker.hooks.slowdown import SLOWDOWN_ENV  # noqa: E402


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else None, "ci95": [lo, hi]}


def tally(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """False-positive rate and power from trial verdicts."""
    aa = [t for t in trials if t["kind"] == "aa"]
    slow = [t for t in trials if t["kind"] == "slow"]
    aa_cases = [v for t in aa for v in t["verdicts"].values()]
    slow_cases = [v for t in slow for v in t["verdicts"].values()]
    return {
        "aa_case_flagged": rate(sum(v in ("regressed", "improved") for v in aa_cases), len(aa_cases)),
        "aa_gate_failed": rate(sum(t["exit_code"] == 1 for t in aa), len(aa)),
        "aa_case_inconclusive": rate(sum(v == "inconclusive" for v in aa_cases), len(aa_cases)),
        "slow_case_regressed": rate(sum(v == "regressed" for v in slow_cases), len(slow_cases)),
        "slow_case_improved": rate(sum(v == "improved" for v in slow_cases), len(slow_cases)),
        "slow_gate_failed": rate(sum(t["exit_code"] == 1 for t in slow), len(slow)),
    }


def show(summary: dict[str, Any], title: str) -> str:
    lines = [title]
    for key, r in summary.items():
        if r["n"]:
            lines.append(f"  {key:<22} {r['k']:>5}/{r['n']:<5} = {r['rate']:6.1%}  "
                         f"(95% CI {r['ci95'][0]:.1%} … {r['ci95'][1]:.1%})")
    return "\n".join(lines)


def live(args: argparse.Namespace) -> dict[str, Any]:
    matrix = load(args.matrix)
    out = Path(args.work)
    trials: list[dict[str, Any]] = []
    started = time.monotonic()
    kinds = ["aa", "slow"] * args.trials
    for i, kind in enumerate(kinds):
        if time.monotonic() - started > args.max_minutes * 60:
            print(f"time budget of {args.max_minutes} min spent; stopping after {i} trials", file=sys.stderr)
            break
        head_factor = "1.0" if kind == "aa" else str(args.slowdown)
        t0 = time.monotonic()
        opts = ab.ABOptions(out=out / f"{i:03d}-{kind}", rounds=args.rounds, live=False,
                            base=ab.SideSpec(env={SLOWDOWN_ENV: "1.0"}),
                            head=ab.SideSpec(env={SLOWDOWN_ENV: head_factor}),
                            compare=compare.Options(thresholds=args.threshold, count_env_changes=True))
        load_before = os.getloadavg()[0]
        result = ab.run(matrix, opts)
        trials.append({"trial": i, "kind": kind, "factor": float(head_factor), "exit_code": result.exit_code,
                       "loadavg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                       "wall_s": round(time.monotonic() - t0, 1), "dir": str(opts.out),
                       "verdicts": {d.case_id: d.verdict for d in result.deltas},
                       "ratios": {d.case_id: d.time_ratio for d in result.deltas},
                       "ci95": {d.case_id: d.time_ci for d in result.deltas}})
        print(f"trial {i:3d} {kind:<4} exit {result.exit_code} "
              + ", ".join(f"{c} {v} ({trials[-1]['ratios'][c] - 1:+.1%})" for c, v in trials[-1]["verdicts"].items()),
              file=sys.stderr, flush=True)
        if args.out:
            # After every trial: a run stopped by its time limit keeps the trials it finished.
            _write(args, {"mode": "live", "partial": True, "trials": trials, "summary": tally(trials)})
    return {"mode": "live", "matrix": str(args.matrix), "rounds": args.rounds, "slowdown": args.slowdown,
            "trials": trials, "summary": tally(trials)}


def _pool(paths: list[str]) -> dict[tuple[str, str], list[tuple[list[float], list[float]]]]:
    """(case id, device) -> pairs of rounds that ran next to each other.

    From ``tebench ab`` directories, a pair is the two sides of one round (they ran back to
    back, as in a real ``ab`` trial). From plain runs, rounds are ordered by start time and
    neighbours are paired.
    """
    pairs: dict[tuple[str, str], list[tuple[list[float], list[float]]]] = {}
    plain: dict[tuple[str, str], list[tuple[str, list[float]]]] = {}

    def ok_rounds(path: Path) -> dict[tuple[tuple[str, str], int], tuple[str, list[float]]]:
        out = {}
        for rec in judged_run.read(path, judge=False).cases:
            if rec.status == "ok" and rec.samples_ms:
                out[((rec.case_id, rec.device_name), rec.round_no)] = (rec.started or "", rec.samples_ms)
        return out

    for p in map(Path, paths):
        if (p / "base" / results.RESULTS_NAME).is_file():
            base, head = ok_rounds(p / "base"), ok_rounds(p / "head")
            for (key, rnd), (_, samples) in base.items():
                if (key, rnd) in head:
                    pairs.setdefault(key, []).append((samples, head[(key, rnd)][1]))
        else:
            for (key, _), item in ok_rounds(p).items():
                plain.setdefault(key, []).append(item)
    for key, rounds in plain.items():
        rounds.sort(key=lambda x: x[0])
        pairs.setdefault(key, []).extend((a[1], b[1]) for a, b in zip(rounds[0::2], rounds[1::2]))
    return pairs


def pooled(args: argparse.Namespace) -> dict[str, Any]:
    pool = _pool(args.results)
    keys = [k for k, v in pool.items() if len(v) >= args.rounds]
    if not keys:
        raise SystemExit(f"no case has {args.rounds} pairs of rounds in {args.results}")
    rng = np.random.default_rng(args.seed)
    opts = compare.Options(thresholds=args.threshold, count_env_changes=True)
    trials = []
    for i in range(args.trials):
        pairs_aa, pairs_slow = [], []
        for case_id, device in keys:
            picked = rng.choice(len(pool[(case_id, device)]), args.rounds, replace=False)
            base, head = [], []
            for j in picked:
                a, b = pool[(case_id, device)][j]
                if rng.random() < 0.5:  # which of the two is "base" is random
                    a, b = b, a
                base.append(a)
                head.append(b)
            pairs_aa.append((case_id, device, _side(base), _side(head)))
            pairs_slow.append((case_id, device, _side(base), _side([[s * args.slowdown for s in r] for r in head])))
        for kind, pairs in (("aa", pairs_aa), ("slow", pairs_slow)):
            deltas = compare.judge_cases(pairs, opts, paired=True)
            trials.append({"trial": i, "kind": kind, "verdicts": {d.case_id: d.verdict for d in deltas},
                           "exit_code": int(any(d.failing and d.counted for d in deltas))})
    return {"mode": "pool", "results": args.results, "rounds": args.rounds, "slowdown": args.slowdown,
            "pool_pairs": {f"{c} ({d})": len(pool[(c, d)]) for c, d in keys}, "trials_per_kind": args.trials,
            "summary": tally(trials), "note": "trials resample one pool of rounds and are not independent; "
                                              "the intervals treat them as independent"}


def _side(rounds: list[list[float]]) -> compare.Side:
    return compare.Side("ok", None, rounds, float(np.median([np.median(r) for r in rounds])), None, [], None, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("live", help="run tebench ab A/A and slowdown trials on this machine")
    p.add_argument("--matrix", required=True)
    p.add_argument("--trials", type=int, default=10, help="trials of each kind (A/A and slowdown)")
    p.add_argument("--max-minutes", type=float, default=30.0, help="stop starting trials after this")
    p.add_argument("--work", default="runs/gate-calibration", help="where the trials' run directories go")
    p.add_argument("--out", required=True, help="where live.json goes")
    p = sub.add_parser("pool", help="resample stored rounds of one code into A/A and slowdown trials")
    p.add_argument("results", nargs="+", help="run directories or results files (ab directories: both sides)")
    p.add_argument("--trials", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out")
    for p in sub.choices.values():
        p.add_argument("--rounds", type=int, default=5, help="rounds per side of a trial")
        p.add_argument("--slowdown", type=float, default=1.05, help="the injected slowdown factor")
        p.add_argument("--threshold", action="append", default=[], metavar="KIND=VALUE",
                       help="gate threshold as for compare (e.g. time=2%%); default: compare's")
    args = parser.parse_args(argv)
    try:
        args.threshold = parse_thresholds(args.threshold)
    except UsageError as exc:
        parser.error(str(exc))
    t0 = time.time()
    data = live(args) if args.mode == "live" else pooled(args)
    data.update({"machine": f"{platform.node()} ({platform.processor() or platform.machine()}), "
                            f"{os.cpu_count()} cores",
                 "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)),
                 "command": " ".join(["python", "benchmarks/gate_calibration.py", *(argv or sys.argv[1:])]),
                 "wall_s": round(time.time() - t0, 1), "thresholds": {**compare.DEFAULT_THRESHOLDS, **args.threshold},
                 "alpha": compare.DEFAULT_ALPHA})
    print(show(data["summary"], f"{data['mode']}: rounds {args.rounds}, slowdown x{args.slowdown}"))
    if args.out:
        _write(args, data)
    return 0


def _write(args: argparse.Namespace, data: dict[str, Any]) -> None:
    Path(args.out).mkdir(parents=True, exist_ok=True)
    name = "live.json" if args.mode == "live" else f"pool-r{args.rounds}-x{args.slowdown:g}.json"
    tmp = Path(args.out) / (name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(Path(args.out) / name)


if __name__ == "__main__":
    raise SystemExit(main())
