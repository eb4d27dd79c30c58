"""Whether the packages the parent side needs are importable, checked before ``python -m tebench`` runs a command.

Run from a clone with a Python that lacks them (the system ``python3`` instead of ``.venv``), a command
would otherwise end in a raw ``ModuleNotFoundError`` traceback with exit status 1, which tebench uses for
"regression found". This says what to do instead, and exits 2 (bad input: nothing was run).
"""

from __future__ import annotations

import importlib.util
import sys

REQUIRED = ("numpy", "pandas", "jinja2", "matplotlib") + (("tomli",) if sys.version_info < (3, 11) else ())
"""Import names of the parent side's dependencies (pyproject.toml). torch is left out on purpose: the
worker checks it, and a reporting box without torch is supported."""
EXIT_BAD_INPUT = 2
"""The CLI's exit status for bad input (``tebench.cli.common.EXIT_BAD_INPUT``, not imported: that package
may need what is missing)."""


def missing(names: tuple[str, ...] = REQUIRED) -> list[str]:
    """The names among ``names`` that this Python cannot import."""
    return [name for name in names if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken install, or a module without a spec: not usable either
        return False


def require() -> None:
    """Exit 2 with a message naming what is missing and how to get it, where a required package is missing."""
    absent = missing()
    if absent:
        print(f"tebench: this Python ({sys.executable}) lacks {', '.join(absent)}: activate .venv "
              "(source .venv/bin/activate, after bash scripts/bootstrap.sh) or install tebench "
              "(pip install -e .), then run the command again", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)
