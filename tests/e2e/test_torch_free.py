"""The parent process never imports torch: the CLI, the matrix, list, shard,
merge, report, compare and history work where torch is not installed at all
(a reporting box, a CI merge job); only the worker and the probe child need it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import FIXTURES, ROOT
from tebench.plan import environment as detect
from tebench.schema.environment import Environment, Support

# Runs the CLI with an import hook that makes torch (and TE) impossible to import.
NO_TORCH = textwrap.dedent("""
    import importlib.abc, sys

    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "transformer_engine"):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked: torch is not installed here)")
            return None

    sys.meta_path.insert(0, NoTorch())
    if sys.argv[1:] == ["--machine-key"]:
        from tebench.plan.environment import machine_key
        print(machine_key())
        sys.exit(0)
    from tebench.cli import main
    code = main(sys.argv[1:])
    assert "torch" not in sys.modules
    sys.exit(code)
""")


def no_torch(*args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": path, **(env or {})}, cwd=cwd)


def test_parent_modules_do_not_import_torch():
    code = ("import sys, tebench.cli, tebench.plan.matrix, tebench.run.runner, tebench.plan.gates, tebench.plan.shards, "
            "tebench.run.merge, tebench.store.reader, tebench.schema.records, tebench.report, tebench.analysis.compare, tebench.store.history, "
            "tebench.plan.environment, "
            "tebench.workloads; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'transformer_engine')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_report_compare_merge_history_work_without_torch(tmp_path):
    cpu = str(FIXTURES / "cpu-smoke.jsonl")
    steps = [
        ("report", cpu, "--out", str(tmp_path / "report")),
        ("compare", cpu, cpu, "--format", "json", "--out", str(tmp_path / "c.json")),
        ("merge", cpu, "--out", str(tmp_path / "merged")),
        ("history", "add", cpu, "--db", str(tmp_path / "h.db")),
        ("history", "report", "--db", str(tmp_path / "h.db"), "--out", str(tmp_path / "hist")),
    ]
    for args in steps:
        proc = no_torch(*args)
        assert proc.returncode == 0, (args, proc.stderr)
    assert (tmp_path / "report" / "index.html").is_file() and (tmp_path / "merged" / "report" / "index.html").is_file()
    json.loads((tmp_path / "c.json").read_text())


def test_list_uses_the_cached_probe_without_torch(tmp_path):
    env = {"TEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    key = no_torch("--machine-key", env=env).stdout.strip()  # torch "absent" is part of the machine's identity
    cached = Environment(device_type="cpu", torch="2.x", cpu="cached CPU", bf16=True,
                         compile=Support.no("not in this test"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / f"env-{key}.json").write_text(json.dumps(cached.to_dict()))
    proc = no_torch("list", "--preset", "smoke", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "on CPU (cached CPU)" in proc.stdout


def test_bad_input_is_rejected_before_any_probe(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[sizes.gpt.a]\nvocab = 32\n')
    proc = no_torch("run", str(bad), "--out", str(tmp_path / "out"), env={"TEBENCH_CACHE_DIR": str(tmp_path / "c")})
    assert proc.returncode == 2 and "missing key(s) d_model" in proc.stderr
    assert not (tmp_path / "c").exists()  # no probe ran (it would have cached its answer)


def test_probe_answer_is_cached_per_machine_key(tmp_path, monkeypatch):
    monkeypatch.setenv("TEBENCH_CACHE_DIR", str(tmp_path))
    calls = []

    def fake(timeout, python, environ=None):
        calls.append(python)
        return Environment(device_type="cpu", cpu=f"probe {len(calls)}"), True

    monkeypatch.setattr(detect, "_run_probe", fake)
    assert detect.probe(cached=True).cpu == "probe 1"
    again = detect.probe(cached=True)
    assert again.cpu == "probe 1" and len(calls) == 1 and again.time  # volatile fields refreshed
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # another GPU set: another answer
    assert detect.probe(cached=True).cpu == "probe 2"
    assert detect.probe().cpu == "probe 3"  # a plain probe always probes, and refreshes the cache
    assert detect.probe(cached=True).cpu == "probe 3" and len(calls) == 3
    monkeypatch.setenv("CC", "/no/such/compiler")  # the compile gate reads CC: another answer
    assert detect.probe(cached=True).cpu == "probe 4"


def test_a_failing_probe_is_an_error_not_a_traceback(monkeypatch, capsys, tmp_path):
    from tebench import cli

    monkeypatch.setenv("TEBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(detect, "_run_probe", lambda t, p, e=None: (_ for _ in ()).throw(detect.ProbeError("driver broke")))
    assert cli.main(["list", "--preset", "smoke"]) == 2
    assert "driver broke" in capsys.readouterr().err


@pytest.mark.parametrize("module", ["gpt", "distill", "modules"])
def test_spec_modules_are_torch_free(module):
    code = f"import sys, tebench.workloads.{module}_spec; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_a_probe_child_without_torch_is_reported_in_one_line(monkeypatch):
    stderr = 'Traceback (most recent call last):\n  File "x", line 1\nModuleNotFoundError: No module named \'torch\'\n'
    monkeypatch.setattr(detect.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 1, stdout="", stderr=stderr))
    with pytest.raises(detect.ProbeError) as err:
        detect._run_probe(10, None)
    assert "No module named 'torch'" in str(err.value) and "Traceback" not in str(err.value)
