"""Whether the packages the parent side needs are importable, checked before a tebench command runs.

Run from a clone with a Python that lacks them (the system ``python3`` instead of ``.venv``), or on a
reporting box installed without one of them, a command would otherwise end in a raw
``ModuleNotFoundError``: a traceback with exit status 1 (which tebench uses for "regression found") or the
guard's exit 70 (a tebench bug). This says what to do instead, and exits 2 (bad input: nothing was run).

``--help`` needs only :data:`PARSER`: help works on a box that lacks the rest.
"""

from __future__ import annotations

import importlib.util
import sys

from tebench.errors import EXIT_BAD_INPUT  # a leaf that imports nothing: it works where a package is missing

PACKAGES: dict[str, str] = {
    # numpy comes with pandas and matplotlib; the parser needs it too (the presets' list imports the
    # workload specs, whose zipf-markov task is numpy).
    "numpy": "numpy",
    "pandas": "pandas>=2.0",
    "jinja2": "jinja2>=3.1",
    "markupsafe": "jinja2>=3.1",  # jinja2's own dependency, imported by the report's markup
    "matplotlib": "matplotlib>=3.7",
    "pydantic": "pydantic>=2.7.4,<3",
    # pydantic 2's compiled core and its constraint types, imported by name by the record model: a
    # pydantic 1 (or a pydantic installed without its dependencies) has neither.
    "pydantic_core": "pydantic>=2.7.4,<3",
    "annotated_types": "pydantic>=2.7.4,<3",
    **({"tomli": "tomli>=2.0"} if sys.version_info < (3, 11) else {}),
}
"""Import name -> the requirement that provides it, for every third-party package the parent side (every
folder but ``tebench/worker/``) imports: pyproject.toml's dependencies without torch and nvidia-ml-py,
which only the worker imports (``tests/unit/test_installed.py`` holds the two lists together). torch is
left out on purpose: the worker checks it, and a reporting box without torch is supported."""
REQUIRED = tuple(PACKAGES)
"""The import names :func:`require` checks by default."""
PARSER = ("numpy",)
"""What building the argument parser (``--help``) imports beyond the standard library."""


def missing(names: tuple[str, ...] = REQUIRED) -> list[str]:
    """The names among ``names`` that this Python cannot import."""
    return [name for name in names if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken install, or a module without a spec: not usable either
        return False


def require(names: tuple[str, ...] | None = None) -> None:
    """Exit 2 with a message naming what is missing and how to get it, where a required package is missing.

    ``names``: check only these (e.g. :data:`PARSER`); the message then names everything missing of
    :data:`REQUIRED`, so that one install fixes it."""
    if names is not None and not missing(names):
        return
    absent = missing()
    if absent:
        wanted = " ".join(dict.fromkeys(f'"{PACKAGES.get(name, name)}"' for name in absent))
        print(f"tebench: this Python ({sys.executable}) lacks {', '.join(absent)}: activate .venv "
              "(source .venv/bin/activate, after bash scripts/bootstrap.sh) or install tebench "
              f"(pip install -e .; on a machine without torch: pip install {wanted}, as "
              "docs/guide/install.md says), then run the command again", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)
