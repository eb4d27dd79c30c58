"""The process boundary is a package boundary: only ``tebench/worker/`` imports torch.

The parent process (CLI, planning, running, storing, analysis, reports) never
imports torch, Transformer Engine or torchao, so it works where they are not
installed (a reporting box, a CI merge job) and never holds CUDA state it could
not recover from. The rule is checked over the whole tree, every import
statement at any depth (inside functions too), not over a hand-kept list: a new
module is covered the day it is written.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "tebench"
WORKER = PACKAGE / "worker"
ACCELERATOR_LIBRARIES = ("torch", "transformer_engine", "torchao", "triton")
"""Top-level names only the worker may import."""

ALLOWED = {
    # The plugin protocol's documented name (users' workloads import it; it is model code).
    ("tebench/workloads/base.py", "tebench.worker.models.base"),
}
"""(module, import) pairs outside the worker that are allowed, each for a stated reason."""


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement in ``path`` names, with its line; ``if TYPE_CHECKING:`` blocks skipped."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            return  # never executed: annotations only
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
            # `from tebench import worker` names the worker package too
            found.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _allowed(module: str, name: str) -> bool:
    """Whether ``module`` may import ``name`` (or a name inside it) by :data:`ALLOWED`."""
    return any(module == m and (name == n or name.startswith(n + ".")) for m, n in ALLOWED)


def _outside_worker() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if WORKER not in p.parents)


def _forbidden(name: str) -> bool:
    top = name.split(".")[0]
    return top in ACCELERATOR_LIBRARIES or name == "tebench.worker" or name.startswith("tebench.worker.")


def test_the_rule_covers_the_whole_package():
    outside = {str(p.relative_to(ROOT)) for p in _outside_worker()}
    # a sample from each parent-side folder: the walk is over the tree, not a list
    for expected in ("tebench/cli/run.py", "tebench/plan/matrix.py", "tebench/run/executor.py",
                     "tebench/store/reader.py", "tebench/analysis/compare.py", "tebench/report/charts.py",
                     "tebench/schema/records.py", "tebench/workloads/gpt_spec.py"):
        assert expected in outside
    assert not any(p.startswith("tebench/worker/") for p in outside)


def test_only_the_worker_package_imports_torch_te_or_torchao():
    offenders = []
    for path in _outside_worker():
        rel = str(path.relative_to(ROOT))
        for line, name in _imports(path):
            if _forbidden(name) and not _allowed(rel, name):
                offenders.append(f"{rel}:{line}: imports {name}")
    assert not offenders, "the parent process must not import the worker's libraries:\n" + "\n".join(offenders)


def test_the_rule_sees_imports_inside_functions(tmp_path):
    probe = tmp_path / "m.py"
    probe.write_text("def f():\n    import torch.nn\n    from tebench.worker import case\n"
                     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n")
    names = [n for _, n in _imports(probe)]
    assert "torch.nn" in names and "tebench.worker" in names and names.count("torch.nn") == 1
    assert [n for n in names if _forbidden(n)] == ["torch.nn", "tebench.worker", "tebench.worker.case"]


def _parent_modules() -> list[str]:
    mods = []
    for path in _outside_worker():
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        if rel.name == "__main__" or str(path.relative_to(ROOT)) in {a for a, _ in ALLOWED}:
            continue
        mods.append(".".join(parts))
    return mods


def test_every_parent_module_imports_without_torch():
    """Importing every parent-side module (found by walking the tree) loads no torch, TE or torchao."""
    code = ("import importlib, sys\n"
            f"for m in {_parent_modules()!r}:\n"
            "    importlib.import_module(m)\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {ACCELERATOR_LIBRARIES!r}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("folder", ["cli", "plan", "run", "store", "analysis", "report", "schema", "workloads"])
def test_each_parent_folder_is_a_package(folder):
    assert (PACKAGE / folder / "__init__.py").is_file()
