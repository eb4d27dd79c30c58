"""A Python without tebench's packages gets what to do and exit 2, not a traceback; ``--help`` works without
the heavy ones; :mod:`tebench.installed` and the reporting box's recipe name what the parent side imports."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest

import reporting_box
from conftest import ROOT
from tebench import installed

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_every_required_package_is_importable_here():
    assert installed.missing() == []


def test_a_missing_package_gets_the_remedy_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(installed, "REQUIRED", ("pandas", "no_such_package_for_tebench"))
    monkeypatch.setattr(installed, "missing", lambda names=None: ["no_such_package_for_tebench"])
    with pytest.raises(SystemExit) as stop:
        installed.require()
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "lacks no_such_package_for_tebench" in err and "activate .venv" in err and "install tebench" in err


def test_python_m_tebench_checks_before_the_cli_imports(tmp_path):
    # -S: no site-packages, as the system python3 of a fresh clone has none of tebench's packages;
    # tebench itself is found in the clone (-m puts the working directory first on the path).
    run = subprocess.run([sys.executable, "-S", "-m", "tebench", "report", "x.jsonl", "--out", str(tmp_path / "o")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and "activate .venv" in run.stderr and "pandas" in run.stderr


# ---- what the parent side needs, and the reporting box's recipe that installs it ----------------------

def _third_party_imports_of_the_parent() -> dict[str, str]:
    """Top-level module name -> a file importing it, for every import (inside functions too) outside
    tebench/worker/ that is neither the standard library nor tebench; imports under TYPE_CHECKING never run."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "tebench").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("tebench/worker/") or rel == "tebench/workloads/base.py":  # the worker's side
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                       for stmt in block.body for node in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "tebench" and top not in sys.stdlib_module_names:
                    found.setdefault(top, rel)
    return found


def test_required_names_every_package_the_parent_side_imports():
    imported = _third_party_imports_of_the_parent()
    # tomli: matrix.py's fallback for tomllib, imported (and required) on Python 3.10 only.
    assert set(imported) - {"tomli"} <= set(installed.REQUIRED), imported
    assert {"pandas", "numpy", "jinja2", "matplotlib", "pydantic", "pydantic_core"} <= set(imported)


def _pyproject_dependencies() -> dict[str, str]:
    """Distribution name -> its requirement (without a marker), from pyproject.toml."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    out = {}
    for dep in deps:
        requirement = dep.split(";")[0].strip()
        out[re.split(r"[<>=!~\[ ]", requirement, maxsplit=1)[0].lower()] = requirement
    return out


def test_required_packages_are_pyprojects_dependencies_but_the_workers():
    deps = _pyproject_dependencies()
    worker_only = {"torch", "nvidia-ml-py"}  # imported by tebench/worker/ only
    assert worker_only <= set(deps)
    wanted = {requirement for name, requirement in deps.items() if name not in worker_only}
    listed = set(installed.PACKAGES.values()) | {"tomli>=2.0"}  # tomli: listed on Python 3.10 only
    # numpy: pandas' and matplotlib's dependency, not tebench's own; every other one with pyproject's range.
    assert listed - {"numpy"} == wanted


def test_the_reporting_box_recipe_installs_what_the_parent_needs():
    first, second = reporting_box.recipe()
    assert first == ["--no-deps", "-e", "."]
    # Exactly the parent's requirements with pyproject's ranges; tomli is the guide's note for Python 3.10.
    assert set(second) == set(installed.PACKAGES.values()) - {"numpy", reporting_box.PY310_EXTRA}
    assert f'"{reporting_box.PY310_EXTRA}"' in reporting_box.INSTALL_GUIDE.read_text(encoding="utf-8")


def test_no_page_keeps_another_recipe_of_the_reporting_box():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        for line in page.read_text(encoding="utf-8").splitlines():
            if "pip install --no-deps" in line and page != reporting_box.INSTALL_GUIDE:
                raise AssertionError(f"{page}: a recipe of its own ({line.strip()!r}); link to the install guide")


# ---- --help without the heavy packages, the check when a command runs -------------------------------------

BLOCK = """
import runpy, sys
for name in {blocked!r}:
    sys.modules[name] = None  # import and find_spec fail: as if not installed
sys.argv = ["tebench", *sys.argv[1:]]
runpy.run_module("tebench", run_name="__main__", alter_sys=True)
"""
HEAVY = ("pandas", "matplotlib", "pydantic", "pydantic_core", "annotated_types", "jinja2", "markupsafe", "torch")


def _without(blocked: tuple[str, ...], *args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-c", BLOCK.format(blocked=blocked), *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=cwd)


@pytest.mark.parametrize("args", [(), ("env",), ("list",), ("run",), ("report",), ("compare",), ("ab",),
                                  ("merge",), ("history",), ("history", "add"), ("history", "report")])
def test_help_works_without_pandas_matplotlib_pydantic(args):
    run = _without(HEAVY, *args, "--help")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: tebench") and run.stderr == ""


def test_a_command_without_pydantic_gets_the_remedy_not_a_crash(tmp_path):
    run = _without(("pydantic", "pydantic_core"), "report", str(ROOT / "reports/cpu-smoke/results.jsonl"),
                   "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "lacks pydantic, pydantic_core" in run.stderr and 'pip install "pydantic>=2.7.4,<3"' in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "out").exists()
    assert not list(tmp_path.glob("tebench-crash-*.log"))


def test_the_console_script_checks_too(monkeypatch, capsys, tmp_path):
    from tebench import cli

    monkeypatch.setattr(installed, "missing", lambda names=installed.REQUIRED: [n for n in names if n == "pydantic"])
    with pytest.raises(SystemExit) as stop:
        cli.main(["report", str(ROOT / "reports/cpu-smoke/results.jsonl"), "--out", str(tmp_path / "out")])
    assert stop.value.code == 2 and "lacks pydantic" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
