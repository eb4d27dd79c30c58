"""Shared fixtures. GPU tests are marked ``gpu`` and skip cleanly without CUDA."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tebench.schema.environment import Environment, Support

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# The micro sizes that end-to-end tests run on the CPU (a case takes about a second), appended
# to each test's own name, settings and axes.
MICRO_GPT = """
[sizes.gpt.micro]
vocab = 16
d_model = 32
heads = 2
layers = 1
ffn = 64
seq = 16
batch = 4
"""
MICRO_DISTILL = """
[sizes.distill.micro]
vocab = 64
hidden = 32
ffn = 64
blocks = 1
seq = 8
batch = 4
"""


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def _has_te() -> bool:
    try:
        import transformer_engine.pytorch  # noqa: F401

        return True
    except Exception:
        return False


def _has_torchao() -> bool:
    try:
        import torchao.float8  # noqa: F401

        return True
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    cuda, te, ao = _has_cuda(), None, None
    for item in items:
        if "gpu" in item.keywords and not cuda:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
        elif "te" in item.keywords:
            te = _has_te() if te is None else te
            if not te:
                item.add_marker(pytest.mark.skip(reason="needs Transformer Engine"))
        elif "torchao" in item.keywords:
            ao = _has_torchao() if ao is None else ao
            if not ao:
                item.add_marker(pytest.mark.skip(reason="needs torchao (pip install 'tebench[ao]')"))


# Debian's package is ``chromium`` (what .ci/run installs); the others are other distributions' names.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def in_ci() -> bool:
    """Whether this is a CI run (``CI=true``, as GitHub Actions, GitLab and .ci/run's callers set it)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def chromium_path() -> str | None:
    """The first Chromium on PATH (Debian's ``chromium`` first), or None."""
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Headless Chromium for the browser tests. Without one they skip on a developer's machine, but
    fail in CI: .ci/run installs the browser, so a CI run that skipped them would hide a broken install."""
    path = chromium_path()
    if path:
        return path
    if in_ci():
        pytest.fail(f"CI is set but no Chromium is on PATH (looked for {', '.join(CHROMIUM_NAMES)}): "
                    "the browser tests must run in CI; .ci/run installs Debian's chromium", pytrace=False)
    pytest.skip("no Chromium installed (apt-get install chromium)")


def unsaid(text: str, *facts: object) -> list[str]:
    """Which of ``facts`` (the numbers, names, paths and options a message must carry) ``text`` leaves out.

    Tests assert ``unsaid(err, ...) == []`` rather than comparing a whole sentence: rewording a message
    does not fail them, dropping or changing a fact does, and the failure names the missing facts.
    """
    return [str(fact) for fact in facts if str(fact) not in text]


def read_text(path: Path) -> str:
    """A file's text; a stored run kept as ``*.jsonl.gz`` is decompressed."""
    import gzip

    data = Path(path).read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()


def read_jsonl(path: Path) -> list[dict]:
    """Every record of a results file (or any JSON Lines file, compressed or not)."""
    import json

    return [json.loads(line) for line in read_text(path).splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Write records as JSON Lines; returns the path."""
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def tebench_cli(tmp_path):
    """Run the tebench CLI in a child process, as a user would; returns CompletedProcess."""
    import subprocess

    def run(*args: str, env: dict | None = None, timeout: float = 600, check: bool = False):
        # Prepend, not replace: a GPU machine may provide TE through PYTHONPATH.
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        full_env = {**os.environ, "PYTHONPATH": path, **(env or {})}
        proc = subprocess.run([sys.executable, "-m", "tebench", *args], capture_output=True, text=True,
                              env=full_env, timeout=timeout, cwd=tmp_path)
        if check and proc.returncode != 0:
            raise AssertionError(f"tebench {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run


# A stand-in for ``python -m tebench.worker`` (passed as ``RunOptions.python``):
# it answers the runner's worker contract at once, with plausible numbers and
# without torch, so tests of the runner, the CLI, shards, merge and resume do
# not pay for a model they do not look at. ``STUB_FAULT="GLOB=KIND;..."``
# makes matching cases misbehave (``--serve``, the pre-started form, is supported too): ``enospc`` (the worker could not write its
# result), ``die`` (exit 3), ``hang`` (until the runner that started it is gone,
# as the real worker's watchdog does). ``STUB_CHATTER=1`` prints what a workload might on stdout
# and stderr (lines that look like protocol messages too) and sends progress on the protocol pipe.
STUB_WORKER = """
import argparse, fnmatch, json, os, sys, time
args = sys.argv[1:]
if args[:1] == ["-c"]:  # a side's interpreter check (tebench ab): answer as the real Python
    os.execv(sys.executable, [sys.executable, *args])
if args[:2] == ["-m", "tebench.worker"]:
    args = args[2:]
p = argparse.ArgumentParser()
p.add_argument("--case"); p.add_argument("--result"); p.add_argument("--progress", action="store_true")
p.add_argument("--serve", action="store_true"); p.add_argument("--preload")
a = p.parse_args(args)
# The protocol pipe the runner hands a worker (tebench.schema.protocol), else stdout.
channel = os.fdopen(int(os.environ.pop("TEBENCH_PROTOCOL_FD")), "w", buffering=1) \
    if "TEBENCH_PROTOCOL_FD" in os.environ else sys.stdout
if a.serve:  # pre-started: the runner sends the case as one JSON line on stdin
    print(json.dumps({"event": "ready"}), file=channel, flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        sys.exit(0)
    job = json.loads(line)
    a.case, a.result = job["case"], job["result"]
    os.dup2(os.open(job["log"], os.O_WRONLY | os.O_APPEND), 2)
    if channel is not sys.stdout:
        os.dup2(2, 1)
case = json.load(open(a.case))
case_id = "/".join([case["workload"], case["size"], case["mode"]])
for item in filter(None, os.environ.get("STUB_FAULT", "").split(";")):
    pattern, _, kind = item.rpartition("=")
    if fnmatch.fnmatchcase(case_id, pattern):
        if kind == "enospc":
            print("OSError: [Errno 28] No space left on device", file=sys.stderr)
            sys.exit(75)
        if kind == "die":
            sys.exit(3)
        if kind == "hang":
            parent = int(os.environ["TEBENCH_PARENT_PID"])
            while True:
                time.sleep(0.2)
                try:
                    os.kill(parent, 0)
                except ProcessLookupError:
                    sys.exit(3)
steps = case["settings"]["steps"]
warmup = case["settings"]["warmup"]
if os.environ.get("STUB_CHATTER"):  # a workload's output, protocol look-alikes included, and the real progress
    print("chatter on stdout")
    print(json.dumps({"event": "progress", "phase": "fake", "step": 999, "total": 999}))
    print(json.dumps({"event": "ready"}), flush=True)
    print("chatter on stderr", file=sys.stderr, flush=True)
    for i in range(steps + 1):
        print(json.dumps({"event": "progress", "phase": "stub", "step": i, "total": steps}), file=channel, flush=True)
# Built from the worker's own declared types (tebench.schema is torch-free), as the real worker builds it.
from tebench.schema.records import Device, Launch, Loss, Measurements, Memory, Phases, Timing
result = Measurements(
    status="ok", device=Device(type="cpu", name="stub"),
    launch=Launch(method="prestarted" if a.serve else "cold", family=a.preload),
    timing=Timing(samples_ms=[1.0 + 0.01 * i for i in range(steps)]),
    loss=Loss(per_step=[2.0 - 0.1 * i for i in range(warmup + steps)], warmup_steps=warmup),
    memory=Memory(kind="cpu", peak_rss_bytes=1000))
if os.environ.get("STUB_PHASES"):  # every phase the schema declares, each this many seconds
    result.phases = Phases(**{name: float(os.environ["STUB_PHASES"]) for name in Phases.model_fields})
json.dump(result.to_dict(), open(a.result, "w"))
"""

CPU_ENV = Environment(device_type="cpu", compile=Support.no("no compiler in this test"), bf16=True, cpu="test")
"""What the stub runs report as the machine: a CPU, no TE, no torch.compile."""


@pytest.fixture
def stub_worker(tmp_path) -> str:
    """An executable that stands in for the worker's Python (``RunOptions.python``)."""
    path = tmp_path / "stub-python"
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(STUB_WORKER))
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def stub_cli(stub_worker, monkeypatch, capsys):
    """Run ``tebench ARGS`` in this process with the stub worker and :data:`CPU_ENV` (no probe).

    For CLI tests whose subject is the runner, shards, merge or resume rather
    than a model: no interpreter start, no torch import, no real training.
    Returns a CompletedProcess like ``tebench_cli``.
    """
    from tebench import cli
    from tebench.plan import environment as detect
    from tebench.run import options

    monkeypatch.setattr(options, "RunOptions", functools.partial(options.RunOptions, python=stub_worker))
    monkeypatch.setattr(detect, "probe", lambda *a, **k: CPU_ENV.model_copy())

    def run(*args: str, check: bool = False) -> subprocess.CompletedProcess:
        code = cli.main(list(args))
        out, err = capsys.readouterr()
        if check and code != 0:
            raise AssertionError(f"tebench {' '.join(args)} exited {code}\n{out}\n{err}")
        return subprocess.CompletedProcess(list(args), code, out, err)

    return run


STUB_CLI = """
import functools, sys
from tebench import cli
from tebench.plan import environment as detect
from tebench.run import options
from conftest import CPU_ENV
options.RunOptions = functools.partial(options.RunOptions, python=sys.argv[1])
detect.probe = lambda *a, **k: CPU_ENV.model_copy()
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.fixture
def stub_cli_command(stub_worker) -> list[str]:
    """The argv of a ``tebench`` child process that uses the stub worker (for tests that kill it)."""
    return [sys.executable, "-c", STUB_CLI, stub_worker]


# A matrix with every axis of the FP8 modes, and how a test writes one (matrix, calibration and
# lr-warm-up tests share them).
BASE = """
name = "t"
[settings]
steps = 4
warmup = 1
[axes]
modes = ["PT-FP32", "PT-AMP", "TE-FP8"]
[fp8]
recipes = ["delayed", "current"]
formats = ["E4M3", "HYBRID"]
amax_history_len = [16, 1024]
amax_compute_algo = ["max"]
[sizes.gpt.a]
vocab = 32
d_model = 64
heads = 4
layers = 1
ffn = 128
seq = 16
batch = 4
"""


def write(tmp_path: Path, text: str, name: str = "m.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path
