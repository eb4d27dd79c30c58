"""reports/README.md names the data files that are on disk: each run's row, the files of its folder."""

from __future__ import annotations

import re

from conftest import ROOT

README = ROOT / "reports" / "README.md"
ROW = re.compile(r"^\| `(?P<folder>[\w.-]+)/` \|")
DATA_FILE = re.compile(r"`(?P<name>[^`*…\s]+\.(?:jsonl|jsonl\.gz|json|log))`")


def _readme_rows() -> dict[str, str]:
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            rows[match["folder"]] = line
    return rows


def test_every_data_file_a_row_names_exists():
    rows = _readme_rows()
    assert {"h200-nightly", "h200-nightly-warm", "cpu-smoke"} <= set(rows)
    missing = []
    for folder, line in rows.items():
        # The last column says where the data is: a bare name is in the run's folder, a path is from the
        # repository (tests/fixtures/…) or from reports/ (another run's folder).
        data = line.rstrip(" |").rsplit(" | ", 1)[-1]
        for name in (m["name"] for m in DATA_FILE.finditer(data)):
            places = [ROOT / name, ROOT / "reports" / name] if "/" in name else [ROOT / "reports" / folder / name]
            if not any(place.is_file() for place in places):
                missing.append(f"{folder}: {name}")
    assert not missing, missing
