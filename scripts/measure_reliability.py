"""Measure the reliability figures docs/findings/reliability.md quotes (run it on the machine the figures are for).

    .venv/bin/python scripts/measure_reliability.py [--skip-runs]

Everything goes through the real ``tebench`` command in child processes:
start-up times, the fuzz corpus (tests/fuzz/), the operator corpus (tests/fuzz/operator/: FIFOs,
devices, depth bombs, oversized inputs, foreign and damaged SQLite, escapes), two concurrent writers on one
OUT, and a disk-full run (ENOSPC injected into the results writer of an
in-process run with real workers) followed by ``--resume``. Prints a Markdown
table; nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import importlib.util
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "tests" / "fuzz"
OPERATOR = FUZZ / "operator"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TEBENCH = [sys.executable, "-m", "tebench"]

TINY = """
name = "tiny"
[settings]
steps = 3
warmup = 1
timeout_s = 300
[axes]
modes = ["PT-FP32", "PT-AMP"]
[sizes.gpt.micro]
vocab = 16
d_model = 32
heads = 2
layers = 1
ffn = 64
seq = 16
batch = 4
[sizes.distill.micro]
vocab = 64
hidden = 32
ffn = 64
blocks = 1
seq = 8
batch = 4
"""


def timed(args: list[str], **kw) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(TEBENCH + args, capture_output=True, text=True, env=ENV, **kw)
    return time.perf_counter() - t0, proc


def timed_cpu(args: list[str], timeout: float = 120) -> tuple[float, float, subprocess.CompletedProcess | None]:
    """(wall s, CPU s of the child, the process; None if it ran past ``timeout``: a hang)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(TEBENCH + args, capture_output=True, text=True, env=ENV, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc = None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - t0, cpu, proc


def _operator_corpus():
    spec = importlib.util.spec_from_file_location("operator_corpus", OPERATOR / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def operator(tmp: Path) -> dict[str, str]:
    """What an operator can hand tebench (tests/fuzz/operator/): each refusal's exit status, whether it
    names the path, its time (wall and the child's CPU; the CPU time is what the machine's load
    does not change), and whether foreign databases and rendered text stay safe."""
    sys.path.insert(0, str(ROOT))
    from tebench import bounded
    from tebench.store import history_db

    build = _operator_corpus()
    tmp = tmp / "operator"
    tmp.mkdir()
    fifo = build.fifo(tmp / "pipe")
    (tmp / "pipe.json").symlink_to(fifo)
    out_file = tmp / "a-file"
    out_file.write_text("")
    good = tmp / "good.toml"
    good.write_text(build.good_matrix())
    refusals: dict[str, tuple[list[str], Path | str]] = {
        "20,000-size matrix (tebench run)": (["run", str(build.many_sizes(tmp / "sizes.toml")), "--out",
                                              str(tmp / "never")], tmp / "sizes.toml"),
        "10 MB string in a matrix": (["run", str(build.long_string(tmp / "string.toml")), "--out",
                                      str(tmp / "never")], tmp / "string.toml"),
        f"bad last size of a matrix at the {bounded.MATRIX_MAX_BYTES // 1024} KiB limit":
            (["run", str(build.at_the_limit(tmp / "limit.toml", bounded.MATRIX_MAX_BYTES)), "--out",
              str(tmp / "never")], tmp / "limit.toml"),
        "1,100-file extends chain": (["run", str(build.extends_chain(tmp / "chain")), "--out", str(tmp / "never")],
                                     tmp / "chain" / f"c{build.DEPTH - 1}.toml"),
        "1,100-level table": (["run", str(OPERATOR / "matrices" / "deep_table_header.toml"), "--out",
                               str(tmp / "never")], OPERATOR / "matrices" / "deep_table_header.toml"),
        "1,100-level inline table": (["run", str(OPERATOR / "matrices" / "deep_inline_table.toml"), "--out",
                                      str(tmp / "never")], OPERATOR / "matrices" / "deep_inline_table.toml"),
        "tebench list /dev/zero": (["list", "/dev/zero"], "/dev/zero"),
        "FIFO as the matrix file": (["list", str(fifo)], fifo),
        "FIFO as --db": (["history", "report", "--db", str(fifo), "--out", str(tmp / "h")], fifo),
        "FIFO as a results file named *.json": (["report", str(tmp / "pipe.json"), "--out", str(tmp / "r")],
                                                tmp / "pipe.json"),
        "tebench ab --out FILE": (["ab", str(good), "--out", str(out_file)], out_file),
        "merge of a header claiming 1,000,000,000 shards":
            (["merge", str(OPERATOR / "results" / "header_shard_billion.jsonl"), "--out", str(tmp / "m"),
              "--no-report"], OPERATOR / "results" / "header_shard_billion.jsonl"),
    }
    figures: dict[str, str] = {}
    for what, (args, named) in refusals.items():
        wall, cpu, proc = timed_cpu(args, timeout=60)
        if proc is None:
            figures[f"refused: {what}"] = "HANGS (killed after 60 s)"
            continue
        ok = proc.returncode == 2 and "Traceback" not in proc.stderr and (str(named) in proc.stderr)
        figures[f"refused: {what}"] = (f"{'exit 2, names the file' if ok else 'NOT REFUSED CLEANLY: ' + proc.stderr[-200:]}"
                                       f"; {wall:.2f} s wall, {cpu:.2f} s CPU")
    base, head, _ = build.million_samples(tmp)
    wall, cpu, proc = timed_cpu(["compare", str(base), str(head), "--format", "json", "--out", str(tmp / "c.json")],
                                timeout=600)
    figures["compare of a case with 1,000,000 samples (two 20 MB files)"] = (
        "ran past 600 s" if proc is None else f"exit {proc.returncode}; {wall:.2f} s wall, {cpu:.2f} s CPU")
    dbs = build.databases(tmp / "dbs", history_db.SCHEMA)
    dbs["/dev/null"] = (Path("/dev/null"), "character device")
    untouched, refused = 0, 0
    for path, fragment in dbs.values():
        before = {p.name: p.read_bytes() for p in path.parent.iterdir() if p.is_file()} if path.parent != Path("/dev") else {}
        proc = subprocess.run(TEBENCH + ["history", "report", "--db", str(path), "--out", str(tmp / "h")],
                              capture_output=True, text=True, env=ENV, timeout=120)
        refused += proc.returncode == 2 and str(path) in proc.stderr and "Traceback" not in proc.stderr
        after = {p.name: p.read_bytes() for p in path.parent.iterdir() if p.is_file()} if path.parent != Path("/dev") else {}
        untouched += before == after
    figures["foreign or damaged SQLite as --db (unrelated, someone else's cases table, another application_id, "
            "truncated, not SQLite, header only, /dev/null)"] = (
        f"{refused}/{len(dbs)} refused with exit 2 naming the file, {untouched}/{len(dbs)} left byte for byte")
    typed = [n for n, w in json.loads((OPERATOR / "results" / "expected.json").read_text()).items()
             if w["command"] == "history-add"]
    against = 0
    for name in typed:
        path = OPERATOR / "results" / name
        proc = subprocess.run(TEBENCH + ["history", "add", str(path), "--db", str(tmp / "t.db")],
                              capture_output=True, text=True, env=ENV, timeout=120)
        against += proc.returncode == 2 and re.search(re.escape(str(path)) + r":\d+: ", proc.stderr) is not None
    figures["wrong-typed values in a results file (history add)"] = f"{against}/{len(typed)} reported against file:line"
    hostile = build.hostile(ROOT / "tests" / "fixtures" / "cpu-smoke.jsonl", tmp / "hostile.jsonl")
    timed(["report", str(hostile), "--out", str(tmp / "hr")])
    md = (tmp / "hr" / "report.md").read_text()
    prose = re.sub(r"(?s)```.*?```", "", md)
    raw = sum(prose.count(x) for x in ("<script", "<img", "@octocat", "\x1b", "\u2028")) + \
        sum(line.startswith("# FAKE") for line in prose.splitlines())
    html = (tmp / "hr" / "index.html").read_text()
    raw_html = html.count("<script>alert") + html.count("<img src=x") + html.count("\x1b")
    _, listed = timed(["list", str(OPERATOR / "matrices" / "exclusion_reason_escapes.toml")])
    figures["markup and escapes in every text of a results file / a matrix"] = (
        f"report.md: {raw} raw, index.html: {raw_html} raw; tebench list: {listed.stdout.count(chr(27))} raw escape(s)")
    return figures


def startup(n: int) -> dict[str, str]:
    helps = [timed(["--help"])[0] for _ in range(n)]
    timed(["list", "--preset", "nightly"])  # warms the probe cache
    lists = [timed(["list", "--preset", "nightly"])[0] for _ in range(n)]
    return {"tebench --help": f"median {statistics.median(helps):.2f} s, max {max(helps):.2f} s ({n} runs)",
            "tebench list --preset nightly (probe cached)":
                f"median {statistics.median(lists):.2f} s, max {max(lists):.2f} s ({n} runs)"}


def corpus(tmp: Path) -> dict[str, str]:
    named, times, tracebacks, matrices = 0, [], 0, sorted((FUZZ / "matrices").glob("*.toml"))
    for path in matrices:
        head = path.read_bytes().decode("utf-8", "replace")
        key = re.search(r"^# expect-key: (.*)$", head, re.M).group(1)
        where = re.search(r"^# expect-file: (.*)$", head, re.M)
        file = str(path.parent / where.group(1)) if where else str(path)
        seconds, proc = timed(["run", str(path), "--out", str(tmp / "never")])
        times.append(seconds)
        tracebacks += "Traceback" in proc.stderr
        # Value: shown as "[key] = value" unless the key is missing (then the message lists the missing keys).
        # ...or, for a bad table name (an unknown workload), the name itself in quotes.
        names_value = (" = " in proc.stderr or "missing key" in proc.stderr or key in ("file", "exclude", "sizes")
                       or f"'{key.rsplit('.', 1)[-1]}'" in proc.stderr)
        named += proc.returncode == 2 and file in proc.stderr and f"[{key}]" in proc.stderr and names_value
    expected = json.loads((FUZZ / "results" / "expected.json").read_text())
    res_ok, res_times = 0, []
    for name, want in sorted(expected.items()):
        seconds, proc = timed(["report", str(FUZZ / "results" / name), "--out", str(tmp / "report")])
        res_times.append(seconds)
        tracebacks += "Traceback" in proc.stderr
        code = 2 if want["outcome"] == "refused" else 0
        res_ok += proc.returncode == code and want["fragment"] in proc.stderr and str(FUZZ / "results" / name) in proc.stderr
    return {
        "bad matrices: exit 2 naming file, key and value": f"{named}/{len(matrices)} ({100 * named / len(matrices):.0f}%)",
        "bad matrices: seconds per rejection (tebench run)": f"median {statistics.median(times):.2f} s, "
                                                             f"max {max(times):.2f} s",
        "corrupt results (tebench report): refused with exit 2, or line skipped naming file:line":
            f"{res_ok}/{len(expected)} ({100 * res_ok / len(expected):.0f}%), max {max(res_times):.2f} s",
        "tracebacks": str(tracebacks),
    }


def concurrent(tmp: Path) -> dict[str, str]:
    matrix = tmp / "tiny.toml"
    matrix.write_text(textwrap.dedent(TINY))
    out = tmp / "shared-out"
    first = subprocess.Popen(TEBENCH + ["run", str(matrix), "--out", str(out), "--quiet", "--no-report"],
                             env={**ENV, "TEBENCH_TEST_FAULT": "gpt/micro/PT-FP32=hang"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 300
        # The first run is under way (and holds the lock) once its first case's worker has started.
        while time.time() < deadline and not list(out.glob(".work/*.case.json")):
            time.sleep(0.2)
        seconds, second = timed(["run", str(matrix), "--out", str(out), "--quiet", "--no-report", "--resume"])
    finally:
        first.kill()  # the process this script started (it hangs by design); its worker watchdog exits too
        first.wait()
    refused = second.returncode == 2 and "in use by another tebench run" in second.stderr
    return {"2 concurrent writers on one OUT": ("one refused" if refused else f"NOT refused: {second.stderr[-300:]}")
            + f" (exit {second.returncode} after {seconds:.2f} s)"}


def disk_full(tmp: Path) -> dict[str, str]:
    sys.path.insert(0, str(ROOT))
    from tebench.plan import environment as detect, matrix
    from tebench.store import reader as results
    from tebench.store.writer import Writer
    from tebench.run import runner
    from tebench.errors import StorageError
    from tebench.run.options import RunOptions

    path = tmp / "tiny.toml"
    path.write_text(textwrap.dedent(TINY))
    mat = matrix.load(path)
    env = detect.probe(cached=True)
    out = tmp / "full-out"
    original = Writer.append
    calls = {"n": 0}

    def append(self, record):
        calls["n"] += 1
        if calls["n"] > 3:  # header + 2 cases fit, then the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        original(self, record)

    Writer.append = append
    try:
        runner.run(mat, env, RunOptions(out=out, live=False))
        stopped = "did not stop"
    except StorageError as exc:
        stopped = "stopped with exit 2: " + str(exc).split(". Finished")[0].split(" in /")[0] + ", ENOSPC"
    finally:
        Writer.append = original
    kept = results.read(out).latest()
    runner.run(mat, env, RunOptions(out=out, resume=True, live=False))
    final = results.read(out)
    statuses = sorted({r["status"] for r in final.latest().values()})
    return {"disk full mid-run (ENOSPC injected at the 3rd record, real workers)":
            f"{stopped}; {len(kept)} finished case(s) kept, {sum(r['status'] != 'ok' for r in kept.values())} "
            f"mislabelled; --resume completed {len(final.latest())}/{len(list(matrix.iter_cases(mat)))} cases, "
            f"statuses {statuses}, {len(final.cases)} case records in all"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-runs", action="store_true", help="skip the runs with real workers")
    parser.add_argument("-n", type=int, default=5, help="repetitions of the start-up timings")
    args = parser.parse_args()
    figures: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        figures.update(startup(args.n))
        figures.update(corpus(Path(tmp)))
        figures.update(operator(Path(tmp)))
        if not args.skip_runs:
            figures.update(concurrent(Path(tmp)))
            figures.update(disk_full(Path(tmp)))
    print(f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPU cores, `python scripts/measure_reliability.py`\n")
    print("| what | measured |\n|---|---|")
    for key, value in figures.items():
        print(f"| {key} | {value} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
