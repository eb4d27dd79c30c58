"""The environment of a child ``python -m tebench`` that must import this checkout's tebench."""

from __future__ import annotations

import os

from conftest import ROOT


def env_with_root(**extra: str) -> dict[str, str]:
    """This process's environment with the repository root first on PYTHONPATH, and ``extra`` set."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
