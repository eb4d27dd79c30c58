"""The results paths a command takes: a file, or a run folder the reader reads (results.jsonl or .gz)."""

from __future__ import annotations

import gzip
import shutil

import pytest

from conftest import FIXTURES
from tebench.cli.common import UsageError, check_results_paths
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
