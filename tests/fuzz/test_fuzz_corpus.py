"""The fuzz corpus (tests/fuzz/): every bad matrix and every corrupt results file
gives a clean refusal (exit 2, naming file, key and value) or a skipped line
naming file:line, never a traceback.

The whole corpus goes through the validation functions and the CLI's ``main``
in-process (fast); a small sample also goes through the real ``tebench``
process, to prove exit status 2 and no traceback end to end.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from conftest import FIXTURES
from tebench import cli
from tebench.plan import matrix
from tebench.schema.version import SchemaError
from tebench.report import load as report_load

FUZZ = Path(__file__).resolve().parent
MATRICES = sorted((FUZZ / "matrices").glob("*.toml"))
EXPECTED = json.loads((FUZZ / "results" / "expected.json").read_text())
RESULTS = sorted(EXPECTED)
CPU = FIXTURES / "cpu-smoke.jsonl"


def expectation(path: Path) -> tuple[str, str, str]:
    """(key, message fragment, file holding the bad value) from the corpus file's comments."""
    head = path.read_bytes().decode("utf-8", "replace")
    key = re.search(r"^# expect-key: (.*)$", head, re.M).group(1)
    fragment = re.search(r"^# expect: (.*)$", head, re.M).group(1)
    where = re.search(r"^# expect-file: (.*)$", head, re.M)
    return key, fragment, str(path.parent / where.group(1)) if where else str(path)


def test_corpus_is_large_enough():
    assert len(MATRICES) >= 100 and len(RESULTS) >= 30


@pytest.mark.parametrize("path", MATRICES, ids=lambda p: p.stem)
def test_bad_matrix_names_file_key_and_value(path):
    key, fragment, where = expectation(path)
    with pytest.raises(matrix.MatrixError) as err:
        matrix.load(path)
    message = str(err.value)
    assert message.startswith(where + ":") and f"[{key}]" in message and fragment in message, message


@pytest.mark.parametrize("path", MATRICES[::10], ids=lambda p: p.stem)
def test_bad_matrix_through_cli_main_exits_2(path, capsys):
    assert cli.main(["list", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tebench list: error: ") and "Traceback" not in err


@pytest.mark.parametrize("name", RESULTS)
def test_corrupt_results_are_refused_or_skipped_with_file_line(name):
    path = FUZZ / "results" / name
    want = EXPECTED[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            report_load.load(path)
            outcome, message = "skipped", " ".join(str(w.message) for w in caught)
        except SchemaError as exc:
            outcome, message = "refused", str(exc)
    assert outcome == want["outcome"], message
    assert want["fragment"] in message and str(path) in message, message
    if outcome == "skipped":
        assert re.search(re.escape(str(path)) + r":\d+: ", message), message


@pytest.mark.parametrize("name", RESULTS)
def test_corrupt_results_through_compare_merge_and_history(name, tmp_path, capsys):
    """Each reading command: exit 2 with a message for a refused file, success for a skipped line."""
    path = str(FUZZ / "results" / name)
    refused = EXPECTED[name]["outcome"] == "refused"
    if name.startswith("pb_"):
        commands = [["report", path, "--out", str(tmp_path / "report")]]
    else:
        commands = [["compare", path, str(CPU), "--format", "json", "--out", str(tmp_path / "c.json")],
                    ["merge", path, "--out", str(tmp_path / "merged"), "--no-report"],
                    ["history", "add", path, "--db", str(tmp_path / "h.db")]]
    for argv in commands:
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert "Traceback" not in err
        if refused:
            assert code == 2 and "error: " in err and EXPECTED[name]["fragment"] in err, (argv, err)
        else:
            # compare may answer "regressed" (1) or "no case in common" (2): answers, not crashes.
            assert code in ((0, 1, 2) if argv[0] == "compare" else (0,)), (argv, err)
            assert "warning: " in err and f"{path}:" in err, (argv, err)


def test_report_of_a_file_with_skipped_lines_renders(tmp_path, capsys):
    path = FUZZ / "results" / "samples_nan.jsonl"
    assert cli.main(["report", str(path), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "index.html").is_file()
    assert f"{path}:2" in capsys.readouterr().err


SAMPLE_MATRICES = ["settings_timeout_s_0", "gpt_only_vocab", "size_name_0", "structure_extends_bad_parent",
                   "binary_garbage"]
SAMPLE_RESULTS = ["binary.jsonl", "list_line.jsonl", "header_env_string.jsonl", "pb_no_stats.json"]


@pytest.mark.parametrize("stem", SAMPLE_MATRICES)
def test_real_cli_rejects_bad_matrix_with_exit_2(stem, tebench_cli, tmp_path):
    path = FUZZ / "matrices" / f"{stem}.toml"
    key, fragment, where = expectation(path)
    proc = tebench_cli("run", str(path), "--out", str(tmp_path / "out"), timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert where in proc.stderr and f"[{key}]" in proc.stderr and fragment in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()  # rejected before anything was created


@pytest.mark.parametrize("name", SAMPLE_RESULTS)
def test_real_cli_reads_corrupt_results_without_traceback(name, tebench_cli, tmp_path):
    path = str(FUZZ / "results" / name)
    proc = tebench_cli("report", path, "--out", str(tmp_path / "r"), timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == (2 if EXPECTED[name]["outcome"] == "refused" else 0), proc.stderr
    assert EXPECTED[name]["fragment"] in proc.stderr, proc.stderr
