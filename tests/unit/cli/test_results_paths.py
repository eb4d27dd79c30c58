"""The results paths a command takes: a file, or a run folder the reader reads (results.jsonl or .gz)."""

from __future__ import annotations

import gzip
import shutil

import pytest

from conftest import FIXTURES
from tebench.cli.paths import check_results_paths
from tebench.cli.usage import UsageError
from tebench.store.reader import results_path


def test_a_folder_holding_only_the_compressed_file_is_accepted(tmp_path):
    folder = tmp_path / "stored"
    folder.mkdir()
    (folder / "results.jsonl.gz").write_bytes(gzip.compress((FIXTURES / "cpu-smoke.jsonl").read_bytes()))
    check_results_paths([str(folder)])  # no UsageError
    assert results_path(folder) == folder / "results.jsonl.gz"


def test_a_folder_holding_the_plain_file_is_accepted(tmp_path):
    shutil.copy(FIXTURES / "cpu-smoke.jsonl", tmp_path / "results.jsonl")
    check_results_paths([str(tmp_path)])


def test_a_folder_without_results_names_both_files(tmp_path):
    with pytest.raises(UsageError, match=r"neither results\.jsonl nor results\.jsonl\.gz"):
        check_results_paths([str(tmp_path)])


def test_a_folder_of_runs_kept_under_other_names_names_them(tmp_path):
    # reports/h200-nightly-twice holds night1.jsonl.gz and night2.jsonl.gz: the folder alone was refused without them.
    for name in ("night1.jsonl.gz", "night2.jsonl", "notes.txt"):
        (tmp_path / name).write_text("x")
    with pytest.raises(UsageError, match=r"; it holds night1\.jsonl\.gz, night2\.jsonl: give one of them$"):
        check_results_paths([str(tmp_path)])


ASV = '{"commit_hash": "0123abcd", "env_name": "conda-py3.11", "params": {}, "results": {}, "version": 2}\n'
OPTIMUM = '{\n  "config": {"name": "pytorch_bert"},\n  "report": {"forward": {}}\n}\n'


@pytest.mark.parametrize("command", ["report", "compare", "history", "merge"])
@pytest.mark.parametrize("text", [ASV, OPTIMUM], ids=["asv", "optimum-benchmark"])
def test_another_tools_json_is_told_what_tebench_reads(tmp_path, capsys, command, text):
    from tebench import cli

    given = tmp_path / "benchmark.json"
    given.write_text(text)
    argv = {"report": ["report", str(given), "--out", str(tmp_path / "r")],
            "compare": ["compare", str(given), str(given)],
            "history": ["history", "add", str(given), "--db", str(tmp_path / "h.db")],
            "merge": ["merge", str(given), "--out", str(tmp_path / "m")]}[command]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert str(given) in err and "not a tebench results" in err, err
    for fact in ('"tebench.results"', "JSON Lines", "header", "run folder", "results.jsonl.gz", "pytest-benchmark JSON"):
        assert fact in err, (fact, err)
