"""The layers of ARCHITECTURE.md, checked by import-linter: pyproject's ``[tool.importlinter]`` contracts.

schema → plan (with workloads) → store → analysis → report → run → cli, bottom to top: a module imports
only from its own layer or below; the parent never imports the worker; the worker imports only schema,
plan and workloads. Imports inside functions count. A known violation is listed in ``ignore_imports``
with the change that removes it; a new one fails here, naming the import and its line.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is not installed (pip install -e .[test])")

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "pyproject.toml"
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")


def _lint(config: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # A child process: import-linter imports the root package to find its files, and `-c` puts `cwd`
    # first on the import path, so the package checked is the one in `cwd`.
    return subprocess.run([sys.executable, "-c", LINT, str(config)], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _contracts() -> dict[str, dict]:
    return {c["id"]: c for c in tomllib.loads(CONFIG.read_text())["tool"]["importlinter"]["contracts"]}


def test_tebench_keeps_its_layers():
    proc = _lint(CONFIG, ROOT)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_the_layers_are_those_of_the_architecture():
    layers = _contracts()["layers"]["layers"]
    assert [x.replace(" ", "") for x in layers] == ["cli", "run", "report", "analysis", "store", "plan:workloads",
                                                    "schema"]


def _package(tmp_path: Path, imports: dict[str, str]) -> Path:
    """A package named ``layered`` with tebench's subpackages, each module importing what ``imports`` says;
    returns a config holding tebench's own contracts, ignores left out, for it."""
    pkg = tmp_path / "layered"
    for name in ("cli", "run", "report", "analysis", "store", "plan", "workloads", "schema", "worker"):
        (pkg / name).mkdir(parents=True)
        (pkg / name / "__init__.py").write_text("")
        (pkg / name / "mod.py").write_text(imports.get(name, ""))
    for leaf in ("__init__", "envvars", "errors", "escape", "installed"):
        (pkg / f"{leaf}.py").write_text("")
    lines = ['[tool.importlinter]', 'root_package = "layered"', 'exclude_type_checking_imports = true']
    for contract in _contracts().values():
        contract = {k: v for k, v in contract.items() if k != "ignore_imports"}
        lines.append("[[tool.importlinter.contracts]]")
        for key, value in contract.items():
            if isinstance(value, list):
                value = [v.replace("tebench", "layered") for v in value]
            lines.append(f"{key} = {_toml(value)}")
    config = tmp_path / "contracts.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


def _toml(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize("imports,broken", [
    # An upward import inside a function counts as a top-level one.
    ({"schema": "def f():\n    from layered.plan import mod\n"}, "layered.schema is not allowed to import layered.plan"),
    ({"analysis": "from layered.report import mod\n"}, "layered.analysis is not allowed to import layered.report"),
    ({"report": "from layered.run import mod\n"}, "layered.report is not allowed to import layered.run"),
    ({"store": "import layered.analysis.mod\n"}, "layered.store is not allowed to import layered.analysis"),
    ({"report": "import layered.worker.mod\n"}, "layered.report is not allowed to import layered.worker"),
    ({"worker": "from layered.store import mod\n"}, "layered.worker is not allowed to import layered.store"),
])
def test_an_import_against_the_layers_breaks_a_contract(tmp_path, imports, broken):
    proc = _lint(_package(tmp_path, imports), tmp_path)
    assert proc.returncode == 1 and broken in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_imports_downward_and_within_a_layer_keep_the_contracts(tmp_path):
    ok = {"cli": "from layered.run import mod\n", "run": "from layered.report import mod\n",
          "report": "from layered.analysis import mod\n", "analysis": "from layered.store import mod\n",
          "store": "from layered.plan import mod\n", "plan": "from layered.workloads import mod\n",
          "workloads": "from layered.schema import mod\n",
          "worker": textwrap.dedent("""\
              from typing import TYPE_CHECKING
              from layered.schema import mod
              if TYPE_CHECKING:
                  from layered.store import mod as stored
              """)}
    proc = _lint(_package(tmp_path, ok), tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
