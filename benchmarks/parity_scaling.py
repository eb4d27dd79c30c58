"""How does re-judging loss parity scale with the number of records? ``python benchmarks/parity_scaling.py``

Three measurements:

* ``parity.attach`` on N synthetic records (default N = 1,000, 4,000 and
  10,000): three workloads, as many sizes as N needs, six mode variants (two of
  them FP8 recipes), three rounds each, 100-step loss curves with per-round
  noise and a per-mode bias, so that verdicts are a realistic mix;
* on a results file of ``--records`` records (default 10,000) made by copying
  the cases of ``tests/fixtures/*.jsonl`` under new size names until there are
  that many: reading it and re-judging its parity (``record.judge_parity``, the
  step merge and report share), in this process;
* ``tebench merge --no-report`` and ``tebench report`` on that file, end to end
  through the CLI (``--cli``). Most of a big report's time is its charts and
  tables, not parity: on 10,000 records it takes tens of minutes.

Each timing is one wall-clock measurement: the question is seconds or minutes,
not a few percent. ``--json`` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "tests" / "fixtures").glob("*.jsonl"))
TEBENCH = Path(sys.executable).parent / "tebench"

WORKLOADS = ("gpt", "llama", "distill")
VARIANTS: tuple[tuple[str, dict[str, Any] | None, float], ...] = (
    ("PT-FP32", None, 0.0),
    ("PT-AMP", None, 0.002),
    ("PT-AMP+compile", None, 0.002),
    ("TE-BF16", None, 0.004),
    ("TE-FP8", {"recipe": "delayed", "format": "HYBRID"}, 0.01),
    # A bias well outside the band: some cases must fail, as in real runs.
    ("TE-FP8", {"recipe": "current", "format": "E4M3"}, 0.25),
)
"""(mode, fp8 options, relative bias of its loss curve against the reference)."""
ROUNDS = 3
STEPS = 100


def _curve(rng: random.Random, bias: float) -> list[float]:
    return [(0.6 + 3.4 * math.exp(-i / 25.0)) * (1.0 + bias) * (1.0 + rng.gauss(0.0, 0.01))
            for i in range(STEPS)]


def synthetic_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` case records as results files hold them (workloads x sizes x variants x rounds)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    size = 0
    while len(out) < n:
        for workload in WORKLOADS:
            for mode, fp8, bias in VARIANTS:
                for rnd in range(ROUNDS):
                    validation = ({"metric": "greedy_accuracy", "greedy_accuracy": 0.9 - bias, "count": 64}
                                  if workload != "distill" else {"metric": "heldout_mse", "heldout_mse": 0.1})
                    out.append({
                        "case_id": f"{workload}/s{size}/{mode}" + (f"/{fp8['recipe']}" if fp8 else ""),
                        "round": rnd, "status": "ok",
                        "case": {"workload": workload, "size": f"s{size}", "mode": mode,
                                 "dims": {"d_model": 64 * (1 + size % 8), "layers": 2}, "fp8": fp8,
                                 "graphs": False, "fp8_weights": False, "parallel": "single", "nproc": 1,
                                 "settings": {"steps": STEPS - 5, "warmup": 5, "seed": 1234, "lr": 3e-3,
                                              "lr_warmup": 0, "parity_rtol": 0.1, "parity_atol": 0.05}},
                        "loss": {"per_step": _curve(rng, bias)},
                        "validation": validation,
                        "updates": {"unchanged": 0},
                        "setup": {},
                    })
        size += 1
    return out[:n]


def time_attach(n: int) -> float:
    """Seconds ``parity.attach`` takes over ``n`` synthetic records."""
    from tebench.analysis import parity
    from tebench.schema.records import CaseResult

    records = [CaseResult.from_dict(r) for r in synthetic_records(n)]
    start = time.perf_counter()
    parity.attach(records)
    return time.perf_counter() - start


def fixture_results(path: Path, n: int) -> int:
    """Write a results file of ``n`` case records copied from the fixtures; returns how many were written.

    Each copy gets its own size name, so that copies are separate cases with
    their own references, as the cases of a big matrix are.
    """
    header: dict[str, Any] | None = None
    cases: list[dict[str, Any]] = []
    for fixture in FIXTURES:
        for line in fixture.read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            if rec.get("type") == "header":
                header = header or rec
            else:
                cases.append(rec)
    assert header is not None and cases, f"no fixtures under {ROOT / 'tests' / 'fixtures'}"
    out: list[dict[str, Any]] = []
    copy = 0
    while len(out) < n:
        for rec in cases[: n - len(out)]:
            rec = json.loads(json.dumps(rec))
            size = f"{rec['case']['size']}-c{copy}"
            workload, _, rest = rec["case_id"].split("/", 2)
            rec["case_id"] = f"{workload}/{size}/{rest}"
            rec["case"]["size"] = size
            out.append(rec)
        copy += 1
    header = {**header, "case_ids": list(dict.fromkeys(r["case_id"] for r in out))}
    with open(path, "w") as fh:
        for rec in (header, *out):
            fh.write(json.dumps(rec) + "\n")
    return len(out)


def time_cli(*args: str) -> float:
    """Seconds one ``tebench`` command takes, start-up included; raises when it fails."""
    start = time.perf_counter()
    proc = subprocess.run([str(TEBENCH), *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"tebench {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attach", default="1000,4000,10000", help="record counts for parity.attach ('' for none)")
    parser.add_argument("--records", type=int, default=10_000, help="records of the results file (0: skip)")
    parser.add_argument("--cli", default="merge,report", help="commands to time on it: merge, report ('' for none)")
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args(argv)

    result: dict[str, Any] = {"attach_s": {}, "cli_s": {}}
    for n in [int(x) for x in args.attach.split(",") if x]:
        result["attach_s"][n] = time_attach(n)
        print(f"parity.attach, {n:>6} synthetic records: {result['attach_s'][n]:8.2f} s", flush=True)
    if args.records:
        from tebench.analysis import judged_run as record

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "results.jsonl"
            result["records"] = fixture_results(path, args.records)
            print(f"results file of {result['records']} records from {len(FIXTURES)} fixtures", flush=True)
            start = time.perf_counter()
            run = record.read(path, judge=False)
            result["read_s"] = time.perf_counter() - start
            start = time.perf_counter()
            record.judge_parity(run.cases)
            result["judge_parity_s"] = time.perf_counter() - start
            print(f"read {result['read_s']:.2f} s, record.judge_parity {result['judge_parity_s']:.2f} s", flush=True)
            del run  # the commands below read the file themselves
            commands = {
                "merge": ("merge", str(path), "--out", f"{tmp}/merged", "--no-report"),
                "report": ("report", str(path), "--out", f"{tmp}/report"),
            }
            for name in [c for c in args.cli.split(",") if c]:
                result["cli_s"][name] = time_cli(*commands[name])
                print(f"tebench {' '.join(commands[name][:1] + commands[name][4:])}: "
                      f"{result['cli_s'][name]:.2f} s", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
