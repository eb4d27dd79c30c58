"""What a command writes: its text to ``--out`` or stdout (and the GitHub step summary), strict JSON."""

from __future__ import annotations

import json


def emit(text: str, out: str | None, markdown: bool) -> None:
    import os

    if out:
        from tebench.store import atomic

        atomic.write_text(out, text + "\n")
    else:
        print(text)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and markdown:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")


def strict_json(text: str) -> str:
    """Re-encode JSON text that may hold bare NaN/Infinity as strict JSON (null for them)."""
    from tebench.store.writer import dumps_strict

    return dumps_strict(json.loads(text), indent=2)
