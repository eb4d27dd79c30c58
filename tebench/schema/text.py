"""Text a record may hold: valid Unicode everywhere, keys too.

JSON's ``\\ud800`` escape decodes to a lone surrogate, which cannot be written as UTF-8: every
report, CSV and terminal line showing it would fail. pydantic validates declared fields only; this
walk covers the keys a record carries unchecked as well.
"""

from __future__ import annotations

import re
from typing import Any

from tebench.schema.version import RecordError

_SURROGATE = re.compile("[\ud800-\udfff]")

_TEXT_OR_CONTAINER = (str, dict, list)


def check_text(obj: Any, path: str = "") -> None:
    """RecordError for text anywhere in ``obj`` (keys too) that is not valid Unicode (a lone surrogate).

    JSON's ``\\ud800`` escape decodes to a lone surrogate, which cannot be written
    as UTF-8: every report, CSV and terminal line showing it would fail.
    """
    if isinstance(obj, str):
        if _SURROGATE.search(obj):
            raise RecordError(path, obj, "is not valid Unicode text (an unpaired surrogate)")
    elif isinstance(obj, dict):
        for key, item in obj.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _SURROGATE.search(key):
                raise RecordError(path or "(key)", key, "has a key that is not valid Unicode text (an unpaired "
                                                        "surrogate)")
            check_text(item, where)
    elif isinstance(obj, list):
        # Most lists are per-step numbers: only text and containers are walked (one call per number
        # would make reading a long run's file take minutes).
        for i, item in enumerate(obj):
            if type(item) in _TEXT_OR_CONTAINER:
                check_text(item, f"{path}[{i}]")
