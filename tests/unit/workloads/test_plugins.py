"""User workloads: by import path or entry point, checked before anything runs,
and the shipped example run end to end through the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, read_jsonl, unsaid
from helpers.plugin_modules import write_module
from tebench.plan import matrix
from tebench.plan.matrix import MatrixError, iter_cases
from tebench.worker.models import WORKLOADS
from tebench.workloads.plugins import PluginError, load, resolve

EXAMPLE = ROOT / "examples" / "custom-workload"
SPEC = "tinyreg.workload:RegressionWorkload"


@pytest.fixture(autouse=True)
def _clean_registry():
    """Each test starts from the built-in workloads, and leaves no module of its own behind."""
    builtins, modules = dict(WORKLOADS), set(sys.modules)
    yield
    WORKLOADS.clear()
    WORKLOADS.update(builtins)
    for name in set(sys.modules) - modules:
        if name.startswith(("tinyreg", "plug_")):
            del sys.modules[name]


@pytest.fixture
def example_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))


def test_import_path_resolves_to_a_checked_instance(example_on_path):
    wl = load(SPEC)
    assert type(wl).__name__ == "RegressionWorkload" and WORKLOADS[SPEC] is wl
    assert load(SPEC) is wl  # imported once


def test_import_path_is_found_from_the_current_directory(monkeypatch):
    # The installed `tebench` script has its own directory, not the current one, on sys.path.
    monkeypatch.chdir(EXAMPLE)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(EXAMPLE))])
    assert type(load(SPEC)).__name__ == "RegressionWorkload"


def test_unknown_names_resolve_on_first_lookup_as_a_worker_does(example_on_path):
    # The worker never loads the matrix: WORKLOADS[name] must resolve by itself.
    assert type(WORKLOADS[SPEC]).__name__ == "RegressionWorkload"


def test_entry_point_of_an_installed_distribution(tmp_path, example_on_path, monkeypatch):
    dist = tmp_path / "tinyreg-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tinyreg\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text(f"[tebench.workloads]\ntinyreg = {SPEC}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert type(load("tinyreg")).__name__ == "RegressionWorkload"


@pytest.mark.parametrize("body,facts", [
    ("raise RuntimeError('boom at import')\n", ["RuntimeError: boom at import", "cannot import", "'plug_a'",
                                                  "plug_a.py"]),
    ("import no_such_dependency_xyz\n", ["ModuleNotFoundError", "no_such_dependency_xyz"]),
    ("class W:\n    pass\n", ["workload protocol", "no method 'loss'", "no method 'build'",
                              "'size_type'", "dataclass", "plug_a.py"]),
    ("class W:\n    def __init__(self):\n        raise ValueError('needs a config')\n",
     ["W()", "ValueError: needs a config", "plug_a.py"]),
    ("class W:\n    kind = 'layer'\n", ["'kind'", "model, module", "'layer'", "plug_a.py"]),
], ids=["raises-at-import", "missing-dependency", "incomplete-protocol", "constructor-fails", "unknown-kind"])
def test_bad_plugins_say_what_and_where(tmp_path, monkeypatch, body, facts):
    write_module(tmp_path, monkeypatch, "plug_a", body)
    with pytest.raises(PluginError) as err:
        resolve("plug_a:W")
    assert unsaid(str(err.value), *facts) == [], str(err.value)


@pytest.mark.parametrize("name,facts", [
    ("plug_nothere.mod:W", ["cannot import", "'plug_nothere.mod'"]),
    ("tinyreg.workload:Nope", ["no attribute", "'Nope'"]),
    ("tinyreg.workload:", ["'tinyreg.workload:'", "'package.module:Name'"]),
    ("bert", ["unknown workload", "'bert'", "gpt, llama"]),
])
def test_unresolvable_names(example_on_path, name, facts):
    with pytest.raises(PluginError) as err:
        resolve(name)
    assert unsaid(str(err.value), *facts) == [], str(err.value)


def test_a_half_implemented_workload_is_refused_before_any_case(tmp_path, monkeypatch):
    path = write_module(tmp_path, monkeypatch, "plug_b", """
        import dataclasses

        @dataclasses.dataclass(frozen=True)
        class Size:
            n: int = 4

        class W:
            size_type = Size
            def check(self, s): pass
            def build(self, s, family, device, seed): pass
    """)
    m = tmp_path / "m.toml"
    m.write_text('[sizes."plug_b:W".tiny]\nn = 8\n')
    with pytest.raises(MatrixError) as err:
        list(iter_cases(matrix.load(m)))
    message = str(err.value)
    assert unsaid(message, m, "[sizes.plug_b:W]", path, "no method 'batches'", "no method 'validate'") == [], message


def test_user_size_tables_are_validated_like_built_in_ones(example_on_path, tmp_path):
    m = tmp_path / "m.toml"
    m.write_text(f'[sizes."{SPEC}".x]\ndim = 64\nwidth = 3\n')
    with pytest.raises(MatrixError) as err:
        list(iter_cases(matrix.load(m)))
    assert unsaid(str(err.value), m, f"[sizes.{SPEC}.x.width] = 3", "unknown key") == [], str(err.value)


def _cli(args: list[str], cwd, timeout: float = 300) -> subprocess.CompletedProcess:
    # Only tebench itself on PYTHONPATH: the user's package must be found from the current directory.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-m", "tebench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_example_runs_end_to_end_from_its_directory(tmp_path):
    """The README's command, from a copy of examples/custom-workload: workers import the package too."""
    work = tmp_path / "custom-workload"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns("__pycache__"))
    proc = _cli(["run", "matrix.toml", "--out", "out", "--no-report"], work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = {r["case_id"]: r for r in read_jsonl(work / "out" / "results.jsonl") if r["type"] == "case"}
    ref, amp = cases[f"{SPEC}/small/PT-FP32"], cases[f"{SPEC}/small/PT-AMP"]
    assert ref["status"] == amp["status"] == "ok", (ref.get("reason"), amp.get("reason"))
    assert amp["parity"]["verdict"] in ("pass", "fail", "inconclusive")
    # The regression is learnable in 30 steps: the loss falls and the fit is good (not a timing claim).
    assert ref["loss"]["final"] < 0.5 * ref["loss"]["first"] and ref["validation"]["r2"] > 0.5
    assert ref["throughput"]["flops_per_step"] == 6.0 * 2 * 2 * 64 * 256 * 64
    te = cases[f"{SPEC}/small/TE-BF16"]
    assert te["status"] == "ok" or ("skipped" in te["status"] and te["reason"])


def test_cli_exits_2_on_a_bad_plugin_and_runs_nothing(tmp_path):
    (tmp_path / "plug_c.py").write_text("import torch\nraise ImportError('plug_c needs a newer torch')\n")
    (tmp_path / "m.toml").write_text('[sizes."plug_c:W".tiny]\nn = 1\n')
    proc = _cli(["run", "m.toml", "--out", "out"], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert unsaid(proc.stderr, "m.toml", "[sizes.plug_c:W]", "ImportError: plug_c needs a newer torch") == [], \
        proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()
