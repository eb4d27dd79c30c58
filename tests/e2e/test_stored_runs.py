"""Every stored run under reports/ opens by its folder, in every command that reads results.

A stored run is kept as ``results.jsonl.gz`` (reports/README.md); the reader reads such a folder, and the
commands' early path check must ask the reader which file a folder stands for instead of assuming
``results.jsonl``. Each folder goes through ``report``, ``compare`` (against itself) and ``history add``,
in this process through the CLI's main function.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT
from tebench import cli

RESULTS_NAMES = ("results.jsonl", "results.jsonl.gz")
SLOW_BYTES = 250_000
"""A results file larger than this takes seconds to render (the nightlies); those folders run with -m slow."""


def _run_folders() -> list[Path]:
    return sorted({p.parent for p in (ROOT / "reports").rglob("results.jsonl*") if p.name in RESULTS_NAMES})


def _params() -> list:
    out = []
    for folder in _run_folders():
        size = max((folder / name).stat().st_size for name in RESULTS_NAMES if (folder / name).exists())
        marks = [pytest.mark.slow] if size > SLOW_BYTES else []
        out.append(pytest.param(folder, id=str(folder.relative_to(ROOT / "reports")), marks=marks))
    return out


def test_the_walk_covers_compressed_folders_in_the_default_run():
    """The default run (no -m slow) opens at least one folder that holds only results.jsonl.gz."""
    fast = [p.values[0] for p in _params() if not p.marks]
    assert any(not (f / "results.jsonl").exists() and (f / "results.jsonl.gz").exists() for f in fast), fast


@pytest.mark.parametrize("folder", _params())
def test_stored_run_opens_by_its_folder(folder: Path, tmp_path, capsys):
    from tebench.store.reader import read

    assert cli.main(["report", str(folder), "--out", str(tmp_path / "report")]) == 0, capsys.readouterr().err
    assert (tmp_path / "report" / "index.html").is_file()
    assert cli.main(["compare", str(folder), str(folder), "--format", "json"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    code = cli.main(["history", "add", str(folder), "--db", str(tmp_path / "history.db")])
    out, err = capsys.readouterr()
    assert code == 0, err
    # A file of several runs appended (reports/h200-nightly) is stored as its runs, each under its own id.
    ids = read(folder).run_ids
    assert [line.split(" run ")[1].split()[0] for line in out.splitlines() if " run " in line] == ids, out


def test_a_folder_with_both_files_says_which_it_reads(tmp_path, capsys):
    """`gzip -k` leaves results.jsonl beside results.jsonl.gz: every command says it reads the plain one."""
    import shutil

    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(ROOT / "reports" / "cpu-smoke" / "results.jsonl", folder / "results.jsonl")
    (folder / "results.jsonl.gz").write_bytes(b"not read")
    assert cli.main(["report", str(folder), "--out", str(tmp_path / "report")]) == 0
    err = capsys.readouterr().err
    assert "holds both results.jsonl and results.jsonl.gz" in err and "reading results.jsonl only" in err, err
    assert cli.main(["compare", str(folder), str(folder), "--format", "json"]) == 0
    assert "holds both" in capsys.readouterr().err
