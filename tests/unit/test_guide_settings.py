"""The matrix guide's ``[settings]`` block shows every setting at its default: a reader takes its values for
the defaults (it showed ``warmup = 10`` while the default was 5)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tebench.schema.settings import Settings

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "matrix.md"


def test_the_guide_settings_block_lists_every_setting_at_its_default():
    found = re.search(r"^\[settings\][^\n]*\n(.*?)^\[", GUIDE.read_text(), re.S | re.M)
    assert found, "no [settings] block in docs/guide/matrix.md"
    shown = tomllib.loads("\n".join(line for line in found[1].splitlines() if not line.lstrip().startswith("#")))
    defaults = Settings.defaults()
    assert {k: v for k, v in shown.items() if defaults.get(k, object()) != v} == {}
    assert sorted(set(defaults) - set(shown)) == []
