"""The built wheel carries what an installed tebench needs: templates and presets."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from conftest import ROOT


def test_wheel_ships_templates_and_presets(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True)
    (wheel,) = tmp_path.glob("tebench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("tebench/templates/report.html.j2", "tebench/templates/report.md.j2",
                   "tebench/templates/style.css", "tebench/templates/history.html.j2",
                   "tebench/presets/smoke.toml", "tebench/presets/nightly.toml", "tebench/cli/__init__.py"):
        assert needed in names, needed
    # pyproject lists the packages by hand (templates and presets are mapped from top-level folders):
    # every module of the tree must be in the wheel, or an installed tebench breaks where a checkout works.
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "tebench").rglob("*.py")}
    assert modules - names == set()
