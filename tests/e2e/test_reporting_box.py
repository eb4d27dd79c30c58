"""A reporting box built for real: a fresh venv without torch, tebench installed by the recipe of
docs/guide/install.md ("A machine without torch"), and the commands that page promises run in it on
stored runs, a plain results file and a ``.jsonl.gz`` one.

The venv is built once per module (about 20 s from a local package mirror, longer from PyPI). Where pip
cannot reach a package index the tests skip, saying so; with ``CI=true`` they fail instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import reporting_box
from conftest import ROOT
from helpers import fresh_venv
from helpers.fresh_venv import Box, check_ok

SMOKE = ROOT / "reports" / "cpu-smoke" / "results.jsonl"
NIGHTLY_GZ = ROOT / "reports" / "h200-nightly" / "results.jsonl.gz"  # 4 runs in one file: report and compare
DISTILL_GZ = ROOT / "reports" / "h200-tutorial-distill" / "results.jsonl.gz"  # one run: history add


@pytest.fixture(scope="module")
def box(tmp_path_factory) -> dict:
    """The reporting box, built step by step by the recipe; what each stage answered, for the tests."""
    b = fresh_venv.make(tmp_path_factory.mktemp("reporting-box"))
    assert not b.imports("torch") and not b.imports("pandas"), "the fresh venv sees another environment's packages"
    fresh_venv.reach_index(b, "pydantic")  # before anything is installed

    first, second = reporting_box.recipe()
    if sys.version_info < (3, 11):
        second.append(reporting_box.PY310_EXTRA)  # the guide's note for Python 3.10
    stages: dict = {}
    # The recipe's first command, from the clone (its `.`).
    check_ok(b.pip(*[str(ROOT) if a == "." else a for a in first]), "pip install --no-deps -e <clone>")
    stages["bare"] = {"report": b.run(b.tebench, "report", SMOKE, "--out", b.where / "bare-report")}
    # numpy alone: what --help needs; pandas, matplotlib and pydantic still missing.
    check_ok(b.pip("numpy"), "pip install numpy")
    stages["numpy"] = {
        "help": b.run(b.python, "-m", "tebench", "--help"),
        "report-help": b.run(b.tebench, "report", "--help"),
        "history-add-help": b.run(b.python, "-m", "tebench", "history", "add", "--help"),
        "report": b.run(b.tebench, "report", SMOKE, "--out", b.where / "numpy-report"),
    }
    # The recipe's second command, as the guide writes it.
    recipe = b.pip(*second)
    check_ok(recipe, "the recipe's second command")
    stages["recipe"] = recipe
    return {"box": b, "stages": stages}


def test_the_box_has_no_torch(box):
    b = box["box"]
    assert not b.imports("torch")
    assert b.imports("tebench") and b.imports("pandas") and b.imports("pydantic")
    where = b.run(b.python, "-c", "import tebench; print(tebench.__file__)").stdout.strip()
    assert Path(where).resolve().is_relative_to(ROOT.resolve()), where  # the editable install of this clone


def test_without_numpy_a_command_says_what_to_install(box):
    proc = box["stages"]["bare"]["report"]
    assert proc.returncode == 2, proc.stderr
    assert "lacks numpy, pandas" in proc.stderr and "Traceback" not in proc.stderr
    assert 'pip install "numpy" "pandas>=2.0"' in proc.stderr


def test_help_needs_neither_pandas_nor_matplotlib_nor_pydantic(box):
    stage = box["stages"]["numpy"]
    for name in ("help", "report-help", "history-add-help"):
        proc = stage[name]
        assert proc.returncode == 0, (name, proc.stderr)
        assert proc.stdout.startswith("usage: tebench"), (name, proc.stdout[:200])
    proc = stage["report"]  # a command that runs: the remedy, exit 2, not exit 70
    assert proc.returncode == 2, proc.stderr
    assert "lacks pandas" in proc.stderr and "pydantic" in proc.stderr and "Traceback" not in proc.stderr
    assert not (box["box"].where / "numpy-report").exists()


def test_pips_warning_names_only_what_the_worker_needs(box):
    # The guide says which "requires …, which is not installed" lines to expect: torch and nvidia-ml-py only.
    proc = box["stages"]["recipe"]
    unmet = sorted(line.split(" requires ")[1].split(",")[0] for line in (proc.stdout + proc.stderr).splitlines()
                   if line.startswith("tebench ") and "which is not installed" in line)
    assert unmet == ["nvidia-ml-py>=12", "torch>=2.1"], unmet


def test_report_compare_merge_history_run_in_the_box(box):
    b: Box = box["box"]
    out = b.where / "out"
    steps = {
        "report (plain file)": (b.tebench, "report", SMOKE, "--out", out / "smoke"),
        "report (.jsonl.gz file)": (b.tebench, "report", NIGHTLY_GZ, "--out", out / "nightly"),
        "compare": (b.tebench, "compare", SMOKE, SMOKE, "--out", out / "compare.md"),
        "compare (.jsonl.gz files)": (b.python, "-m", "tebench", "compare", NIGHTLY_GZ, NIGHTLY_GZ,
                                      "--format", "json", "--out", out / "compare.json"),
        "merge": (b.tebench, "merge", SMOKE, "--out", out / "merged"),
        "history add (plain file)": (b.tebench, "history", "add", SMOKE, "--db", out / "history.db"),
        "history add (.jsonl.gz file)": (b.tebench, "history", "add", DISTILL_GZ, "--db", out / "history.db"),
        "history report": (b.tebench, "history", "report", "--db", out / "history.db", "--out", out / "history"),
    }
    for what, args in steps.items():
        check_ok(b.run(*args), what)
    for path in ("smoke/index.html", "smoke/report.md", "nightly/index.html", "nightly/report.md", "compare.md",
                 "compare.json", "merged/results.jsonl", "merged/report/index.html", "history.db",
                 "history/history.html", "history/history.md"):
        assert (out / path).is_file() and (out / path).stat().st_size > 0, path
    assert not b.imports("torch")


def test_commands_that_start_workers_say_torch_is_missing(box):
    b: Box = box["box"]
    proc = b.run(b.tebench, "list", "--preset", "smoke")
    assert proc.returncode == 2, proc.stderr
    assert "No module named 'torch'" in proc.stderr and "Traceback" not in proc.stderr
