"""The history's modules import one way down the layers: schema, plan, store, analysis, report, run, cli.

Storage (store/history*.py) imports no analysis and no page; the analyses (analysis/history_*.py) no
page; the page (report/history_page.py, report/jinja_env.py) nothing that runs or parses commands.
Every import statement counts, inside functions too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

LAYERS = ("schema", "plan", "store", "analysis", "report", "run", "cli")
MODULES = ["tebench/store/history.py", "tebench/store/history_db.py", "tebench/analysis/history_changes.py",
           "tebench/analysis/history_latest.py", "tebench/report/history_page.py", "tebench/report/jinja_env.py"]


def _imported(path: Path) -> list[tuple[int, str]]:
    """Every tebench module an import statement names (``from a import b``: ``a.b`` as well as ``a``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "tebench"]


@pytest.mark.parametrize("module", MODULES)
def test_history_imports_only_layers_below_its_own(module):
    own = LAYERS.index(module.split("/")[1])
    above = [f"tebench.{layer}" for layer in LAYERS[own + 1:]]
    wrong = [f"{module}:{line}: {name}" for line, name in _imported(ROOT / module)
             if any(name == a or name.startswith(a + ".") for a in above)]
    assert not wrong, wrong


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from tebench import report\n")
    assert (2, "tebench.report") in _imported(sample)
