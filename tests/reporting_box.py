"""The documented recipe of a reporting box without torch (docs/guide/install.md), as pip arguments.

``tests/unit/test_installed.py`` checks it against pyproject.toml and :mod:`tebench.installed`;
``tests/e2e/test_reporting_box.py`` runs it in a fresh venv.
"""

from __future__ import annotations

import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALL_GUIDE = ROOT / "docs" / "guide" / "install.md"
RECIPE_START = "pip install --no-deps -e . && pip install "
"""How the recipe's line begins, in the guide and wherever else the docs repeat it."""
PY310_EXTRA = "tomli>=2.0"
"""What the guide adds to the second command on Python 3.10."""


def recipe(text: str | None = None) -> tuple[list[str], list[str]]:
    """The arguments after ``pip install`` of the recipe's two commands: ``(["--no-deps", "-e", "."], [reqs…])``."""
    text = INSTALL_GUIDE.read_text(encoding="utf-8") if text is None else text
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith(RECIPE_START)]
    assert len(lines) == 1, f"{INSTALL_GUIDE}: expected one line starting {RECIPE_START!r}, found {lines}"
    first, second = lines[0].split(" && ")
    return shlex.split(first)[2:], shlex.split(second)[2:]
