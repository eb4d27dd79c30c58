"""The operator corpus (tests/fuzz/operator/): nothing an operator hands tebench hangs it, exhausts
its memory or recursion, damages a file that is not tebench's, or writes raw escapes and markup.

Every refusal is exit 2 with a message naming the path (and key), never a traceback. Commands that
meet a FIFO run in a child process with a timeout, so a regression fails its test instead of
hanging the suite; the rest run in this process through ``cli.main``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest

from conftest import FIXTURES, unsaid
from tebench import cli
from tebench.analysis import compare, stats
from tebench.escape import for_terminal, visible
from tebench.plan import matrix
from tebench.run.display import Display
from tebench.schema.records import CaseResult
from tebench import bounded
from tebench.store import history_db

OPERATOR = Path(__file__).resolve().parent / "operator"
_spec = importlib.util.spec_from_file_location("operator_corpus", OPERATOR / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

MATRICES = sorted(p for p in (OPERATOR / "matrices").glob("*.toml") if p.read_text().startswith("# expect"))
RESULTS = json.loads((OPERATOR / "results" / "expected.json").read_text())
CPU = FIXTURES / "cpu-smoke.jsonl"
FIFO_TIMEOUT_S = 120  # far beyond a refusal; only a hang reaches it


def _main_captured(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


def test_the_stored_corpus_is_what_build_py_writes(tmp_path):
    for name, text in build.stored_matrices().items():
        assert (OPERATOR / "matrices" / f"{name}.toml").read_text(encoding="utf-8") == text, name
    assert set(RESULTS) == set(build.stored_results())


# --- matrices: depth bombs, names, messages that point at the right key --------------------------------

@pytest.mark.parametrize("path", MATRICES, ids=lambda p: p.stem)
def test_bad_matrix_is_refused_naming_file_and_key(path, capsys):
    head = path.read_text(encoding="utf-8")
    key = re.search(r"^# expect-key: (.*)$", head, re.M).group(1)
    fragment = re.search(r"^# expect: (.*)$", head, re.M).group(1)
    with pytest.raises(matrix.MatrixError) as err:
        matrix.load(path)
    message = visible(err.value)
    assert message.startswith(f"{path}: [{key}]") and fragment in message, message
    code, _, stderr = _main_captured(capsys, "list", str(path))
    assert code == 2 and str(path) in stderr and "\x1b" not in stderr, stderr


def test_extends_chain_of_1100_files_is_refused_at_the_depth_limit(tmp_path, capsys):
    last = build.extends_chain(tmp_path / "chain")
    code, _, err = _main_captured(capsys, "list", str(last))
    assert code == 2 and f"longer than {matrix.MAX_EXTENDS} files" in err and str(last) in err, err


def test_a_chain_within_the_depth_limit_still_loads(tmp_path):
    last = build.extends_chain(tmp_path / "chain", length=matrix.MAX_EXTENDS)
    assert [c.id for c in matrix.iter_cases(matrix.load(last))] == ["gpt/a/PT-FP32"]


def test_the_files_of_an_extends_chain_share_the_size_limit(tmp_path, capsys):
    parent = build.long_string(tmp_path / "parent.toml", bounded.MATRIX_MAX_BYTES // 2)
    child = tmp_path / "child.toml"
    child.write_text('extends = "parent.toml"\ndescription = "' + "y" * (bounded.MATRIX_MAX_BYTES // 2) + '"\n')
    code, _, err = _main_captured(capsys, "list", str(child))
    assert code == 2 and str(parent) in err and "share" in err, err


@pytest.mark.parametrize("maker,fragment", [
    (lambda d: build.many_sizes(d / "sizes.toml"), "larger than the 128 KiB a matrix file may be"),
    (lambda d: build.long_string(d / "string.toml"), "larger than the 128 KiB a matrix file may be"),
    (lambda d: build.at_the_limit(d / "limit.toml", bounded.MATRIX_MAX_BYTES), "[sizes.gpt.bad.batch] = 0"),
    (lambda d: Path("/dev/zero"), "is a character device, not a matrix file"),
    (lambda d: d, "is a directory, not a matrix file"),
], ids=["20000_sizes", "10MB_string", "bad_last_size_at_the_limit", "dev_zero", "directory"])
def test_large_and_special_matrix_paths_are_refused(maker, fragment, tmp_path, capsys):
    path = maker(tmp_path)
    code, _, err = _main_captured(capsys, "list", str(path))
    assert code == 2 and str(path) in err and fragment in err, err


def test_only_that_matches_nothing_names_the_glob_and_close_ids(capsys, tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(build.good_matrix())
    code, _, err = _main_captured(capsys, "list", str(path), "--only", "gpt/a/PT_FP32")
    assert code == 2 and "--only 'gpt/a/PT_FP32'" in err and "gpt/a/PT-FP32" in err, err
    code, out, err = _main_captured(capsys, "run", str(path), "--out", str(tmp_path / "o"), "--only", "gtp/*")
    assert code == 2 and unsaid(err, "--only 'gtp/*'", "'gpt/*'", "1 case") == [], err
    assert not (tmp_path / "o").exists()


def test_only_glob_that_matches_nothing_beside_one_that_does_is_warned_about(stub_cli, tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(build.good_matrix())
    proc = stub_cli("list", str(path), "--only", "gpt/*", "--only", "nothing/*")
    assert proc.returncode == 0, proc.stderr
    assert unsaid(proc.stderr, "warning", "--only 'nothing/*'") == [], proc.stderr


# --- FIFOs: never waited on -------------------------------------------------------------------------

@pytest.mark.parametrize("argv,what", [
    (["list", "{fifo}"], "matrix file"),
    (["run", "{fifo}", "--out", "{tmp}/out"], "matrix file"),
    (["report", "{fifo_json}", "--out", "{tmp}/r"], "results file"),
    (["history", "report", "--db", "{fifo}", "--out", "{tmp}/h"], "history database"),
    (["history", "add", str(CPU), "--db", "{fifo}"], "history database"),
    (["compare", "{fifo}", str(CPU)], ""),
    (["merge", "{fifo}", "--out", "{tmp}/m", "--no-report"], ""),
], ids=["list", "run", "report_json", "history_report", "history_add", "compare", "merge"])
def test_a_fifo_is_refused_not_waited_on(argv, what, tebench_cli, tmp_path):
    fifo = build.fifo(tmp_path / "pipe")
    (tmp_path / "pipe.json").symlink_to(fifo)
    args = [a.format(fifo=fifo, fifo_json=tmp_path / "pipe.json", tmp=tmp_path) for a in argv]
    proc = tebench_cli(*args, timeout=FIFO_TIMEOUT_S)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert str(tmp_path / "pipe") in proc.stderr, proc.stderr
    if what:
        assert unsaid(proc.stderr, "FIFO", f"not a {what}") == [], proc.stderr


def test_bounded_reads_never_block_and_never_read_past_the_limit(tmp_path):
    fifo = build.fifo(tmp_path / "pipe")
    with pytest.raises(bounded.InputError, match="FIFO"):
        bounded.read_bytes(fifo, "matrix file", 10)
    with pytest.raises(bounded.InputError, match="character device"):
        bounded.read_head("/dev/zero", "results file", 10)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 11)
    with pytest.raises(bounded.InputError, match="larger than the 10 bytes"):
        bounded.read_bytes(big, "matrix file", 10)
    with pytest.raises(FileNotFoundError):
        bounded.read_bytes(tmp_path / "none", "matrix file", 10)


def test_iter_lines_skips_an_overlong_line_without_holding_it(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"one\n" + b"x" * 5000 + b"\nthree\nlast-no-newline")
    lines = list(bounded.iter_lines(path, line_limit=100))
    assert lines == [(1, b"one\n"), (2, None), (3, b"three\n"), (4, b"last-no-newline")]
    with pytest.raises(bounded.InputError, match="larger than"):
        list(bounded.iter_lines(path, limit=100))


# --- history databases: only tebench's own, nothing else touched ----------------------------------

@pytest.mark.parametrize("name", ["unrelated", "foreign_cases_table", "another_application", "truncated",
                                  "not_sqlite", "header_only"])
def test_foreign_or_damaged_database_is_refused_and_left_byte_for_byte(name, tmp_path, capsys):
    dbs = build.databases(tmp_path / "dbs", history_db.SCHEMA)
    path, fragment = dbs[name]
    before = _digests(path.parent)
    for argv in (["history", "report", "--db", str(path), "--out", str(tmp_path / "h")],
                 ["history", "add", str(CPU), "--db", str(path)]):
        code, _, err = _main_captured(capsys, *argv)
        assert code == 2 and str(path) in err and fragment in err, (argv, err)
    assert _digests(path.parent) == before  # no table, no WAL switch, no -wal/-shm beside them
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize("db,fragment", [("/dev/null", "character device"), ("{tmp}", "directory")])
def test_special_paths_as_db_are_refused(db, fragment, tmp_path, capsys):
    db = db.format(tmp=tmp_path)
    for argv in (["history", "report", "--db", db, "--out", str(tmp_path / "h")],
                 ["history", "add", str(CPU), "--db", db]):
        code, _, err = _main_captured(capsys, *argv)
        assert code == 2 and db in err and fragment in err, (argv, err)


def test_a_database_made_before_the_stamp_is_accepted_and_stamped(tmp_path, capsys):
    db = build.unstamped(tmp_path / "old.db", history_db.SCHEMA)
    assert history_db.check(db) == "unstamped"
    code, out, _ = _main_captured(capsys, "history", "add", str(CPU), "--db", str(db))
    assert code == 0 and "added" in out
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == history_db.APPLICATION_ID
    conn.close()
    assert history_db.check(db) == "ours"


def test_a_new_database_is_stamped_and_in_wal_mode(tmp_path, capsys):
    db = tmp_path / "new.db"
    code, _, _ = _main_captured(capsys, "history", "add", str(CPU), "--db", str(db))
    assert code == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == history_db.APPLICATION_ID
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    code, _, _ = _main_captured(capsys, "history", "report", "--db", str(db), "--out", str(tmp_path / "h"))
    assert code == 0 and (tmp_path / "h" / "history.md").is_file()


@pytest.mark.parametrize("name", sorted(n for n, w in RESULTS.items() if w["command"] == "history-add"))
def test_wrong_typed_values_are_reported_against_the_results_file(name, tmp_path, capsys):
    path = OPERATOR / "results" / name
    db = tmp_path / "h.db"
    code, _, err = _main_captured(capsys, "history", "add", str(path), "--db", str(db))
    # A damaged case line is skipped by the reader, naming file:line (the rest is stored); a damaged
    # header refuses the file (exit 2), before the database is made.
    expected = RESULTS[name].get("exit", 2)
    assert code == expected and f"{path}{RESULTS[name]['fragment']}" in err and f"--db {db}" not in err, err
    assert db.exists() == (expected == 0)


# --- merge: a claimed shard count allocates nothing ---------------------------------------------------

@pytest.mark.parametrize("name", sorted(n for n, w in RESULTS.items() if w["command"] == "merge"))
def test_merge_refuses_a_header_claiming_a_huge_shard_count(name, tmp_path, capsys):
    path = OPERATOR / "results" / name
    code, _, err = _main_captured(capsys, "merge", str(path), "--out", str(tmp_path / "m"), "--no-report")
    assert code == 2 and str(path) in err and RESULTS[name]["fragment"] in err, err


# --- escapes: terminal, Markdown, HTML ---------------------------------------------------------------

def test_list_shows_escape_sequences_of_an_exclusion_reason_instead_of_obeying_them(stub_cli):
    path = OPERATOR / "matrices" / "exclusion_reason_escapes.toml"
    proc = stub_cli("list", str(path))
    assert proc.returncode == 0 and "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "\\x1b[2J" in proc.stdout and "\\x0a  run  gpt/a/TE-FP8 forged" in proc.stdout
    assert not any(line.startswith("  run  gpt/a/TE-FP8") for line in proc.stdout.splitlines())


def test_error_messages_show_control_characters(capsys):
    code, _, err = _main_captured(capsys, "list", str(OPERATOR / "matrices" / "key_with_escape.toml"))
    assert code == 2 and "\x1b" not in err and "[settings.\\x1b[31m]" in err


def test_the_progress_display_escapes_what_a_record_says():
    stream = io.StringIO()
    display = Display(1, live=True, stream=stream)
    display.update("k", "gpt/a/\x1b]0;t\x07", "measure", 1, 2)
    record = {"type": "case", "case_id": "gpt/a/PT-FP32", "status": "failed", "reason": build.PAYLOAD,
              "case": {"workload": "gpt", "size": "a", "mode": "PT-FP32", "dims": {}}}
    display.finish(CaseResult.from_dict(record))
    text = stream.getvalue().replace("\r\x1b[K", "")  # the display's own line clearing
    assert "\x1b" not in text and "\x07" not in text and "\u2028" not in text and "\\x1b[31mRED" in text


def test_terminal_escaping_keeps_printable_text_and_names_every_unsafe_character():
    assert for_terminal("gpt/a b/PT-AMP ü 中 \u00a0") == "gpt/a b/PT-AMP ü 中 \u00a0"
    assert visible("a\x1b\u2028\u202e\ufeff\x00\n") == "a\\x1b\\u2028\\u202e\\ufeff\\x00\\x0a"
    assert for_terminal("line\nnext\x07", keep_newlines=True) == "line\nnext\\x07"


def _check_markdown(text: str) -> None:
    """No markup, mention, link, fake heading or control character outside code blocks; inside them
    (shown literally by any renderer) no control character and no fence closed early."""
    assert "\x1b" not in text and "\x07" not in text and "\u2028" not in text
    assert text.count("```") % 2 == 0
    prose = re.sub(r"(?s)```.*?```", "", text)
    assert "<script" not in prose and "<img" not in prose and "@octocat" not in prose
    assert "http://evil" not in prose
    for line in prose.splitlines():
        assert not line.startswith("# FAKE"), line


def test_report_escapes_every_field_of_a_hostile_results_file(tmp_path, capsys):
    hostile = build.hostile(CPU, tmp_path / "hostile.jsonl")
    code, _, _ = _main_captured(capsys, "report", str(hostile), str(FIXTURES / "h200-crossover.jsonl"),
                       "--out", str(tmp_path / "r"), "--assets-url", "https://example.invalid/a")
    assert code == 0
    md = (tmp_path / "r" / "report.md").read_text()
    _check_markdown(md)
    assert "&lt;script&gt;" in md  # the compile cache's folder, shown in the cost section, escaped
    html = (tmp_path / "r" / "index.html").read_text()
    assert "<script>alert" not in html and "<img src=x" not in html and "\x1b" not in html


def test_compare_markdown_escapes_records_and_environments(tmp_path, capsys):
    base = FIXTURES / "h200-crossover.jsonl"
    hostile = build.hostile(base, tmp_path / "hostile.jsonl", keep_names=True)
    code, out, _ = _main_captured(capsys, "compare", str(base), str(hostile), "--count-env-changes")
    assert code in (0, 1)
    _check_markdown(out)
    delta = compare.Delta("gpt/a/PT-AMP", "GPU", "regressed", ["x"], counted=False, flags=[build.PAYLOAD])
    comparison = compare.Comparison("b", "h", {}, {}, [], True, compare.Options(), [delta])
    from tebench.report.compare_markdown import to_markdown

    _check_markdown(to_markdown(comparison))


def test_history_report_escapes_what_runs_recorded(tmp_path, capsys):
    hostile = build.hostile(CPU, tmp_path / "hostile.jsonl")
    db = tmp_path / "h.db"
    assert _main_captured(capsys, "history", "add", str(hostile), "--db", str(db))[0] == 0
    assert _main_captured(capsys, "history", "report", "--db", str(db), "--out", str(tmp_path / "h"))[0] == 0
    _check_markdown((tmp_path / "h" / "history.md").read_text())
    assert "<script>alert" not in (tmp_path / "h" / "history.html").read_text()


# --- ab refuses before it starts either side -----------------------------------------------------------

@pytest.mark.parametrize("extra,fragment", [
    (["--out", "{file}"], "is a file, not a directory"),
    (["--out", "{tmp}/o", "--device", "x"], "--device x"),
    (["--out", "{tmp}/o", "--timeout", "0"], "--timeout 0"),
    (["--out", "{tmp}/o", "--head-python", "{tmp}/no-python"], "no such executable"),
    (["--out", "{tmp}/o", "--only", "nothing/*"], "--only 'nothing/*'"),
])
def test_ab_refuses_before_probing_or_starting_a_side(extra, fragment, tmp_path, capsys, monkeypatch):
    from tebench.run import ab
    from tebench.plan import environment

    def forbidden(*args, **kwargs):
        raise AssertionError("ab started a side or probed the machine before refusing its input")

    monkeypatch.setattr(environment, "probe", forbidden)
    monkeypatch.setattr(ab, "probe", forbidden)
    monkeypatch.setattr(ab, "_check_python", forbidden)
    path = tmp_path / "m.toml"
    path.write_text(build.good_matrix())
    (tmp_path / "file").write_text("")
    args = [a.format(file=tmp_path / "file", tmp=tmp_path) for a in extra]
    code, _, err = _main_captured(capsys, "ab", str(path), *args)
    assert code == 2 and fragment in err, err


def test_ab_refuses_an_out_that_holds_earlier_results(tmp_path, capsys):
    path = tmp_path / "m.toml"
    path.write_text(build.good_matrix())
    (tmp_path / "o" / "head").mkdir(parents=True)
    (tmp_path / "o" / "head" / "results.jsonl").write_text("")
    code, _, err = _main_captured(capsys, "ab", str(path), "--out", str(tmp_path / "o"))
    assert code == 2 and "already exists" in err, err


# --- samples: a million steps cost seconds, not minutes ------------------------------------------------

def _old_block_bootstrap(samples, resamples=400, seed=0):
    """The block bootstrap before rounds were bounded: what rounds up to MAX_BOOTSTRAP_STEPS still get."""
    import math

    import numpy as np

    a = np.asarray(samples, dtype=float)
    n = a.size
    if n < 2:
        return 0.0
    b = stats.block_length(a)
    rng = np.random.default_rng(seed)
    k = math.ceil(n / b)
    starts = rng.integers(0, n, (resamples, k))
    idx = ((starts[:, :, None] + np.arange(b)) % n).reshape(resamples, k * b)[:, :n]
    return float(np.var(np.log(np.median(a[idx], axis=1)), ddof=1))


@pytest.mark.parametrize("n", [2, 5, 50, 147, 1000, stats.MAX_BOOTSTRAP_STEPS])
def test_block_bootstrap_is_unchanged_up_to_the_bound(n):
    import numpy as np

    rng = np.random.default_rng(n)
    x = 10 + np.cumsum(rng.normal(0, 0.05, n)) * 0.1 + rng.normal(0, 0.1, n)
    assert stats.block_bootstrap_log_median_var(x, seed=3) == _old_block_bootstrap(x, seed=3)


def test_longer_rounds_are_resampled_m_out_of_n_with_the_variance_of_the_whole(monkeypatch):
    import numpy as np

    rng = np.random.default_rng(0)
    x = 10 * np.exp(rng.normal(0, 0.05, 40_000))
    full = _old_block_bootstrap(x)
    monkeypatch.setattr(stats, "MAX_BOOTSTRAP_STEPS", 4_000)
    bounded_var = stats.block_bootstrap_log_median_var(x)
    assert 0.5 < bounded_var / full < 2.0, (bounded_var, full)


def test_compare_of_a_case_with_a_million_samples_completes(tmp_path):
    base, head, case_id = build.million_samples(tmp_path)
    result = compare.compare(base, head)
    case = next(d for d in result.deltas if d.case_id == case_id)
    assert case.time_ratio is not None and 1.0 < case.time_ratio < 1.05
    json.loads(result.to_json())


@pytest.mark.parametrize("field, value", [("launch", build.PAYLOAD), ("compile_cache", {"state": build.PAYLOAD})])
def test_a_hostile_enumerated_header_field_is_refused(tmp_path, capsys, field, value):
    """The header's launch and compile-cache state, once copied raw into report.md, are enumerated in the
    schema: a value outside them refuses the file (exit 2, naming the field) before anything renders."""
    lines = CPU.read_text().splitlines()
    header = json.loads(lines[0])
    header[field] = value
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    code, _, err = _main_captured(capsys, "report", str(bad), "--out", str(tmp_path / "r"))
    assert code == 2 and f"[{field}" in err and not (tmp_path / "r" / "report.md").exists()
