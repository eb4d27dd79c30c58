"""The environment, paths and exit codes: the probe's import path, paths of bytes that are not UTF-8,
empty presets, pseudo file systems, damage on the base side of a comparison, and the executor's
defences against what a workload does (prints JSON, runs in device threads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from conftest import FIXTURES, ROOT, unsaid
from tebench import cli
from tebench.plan import environment as detect
from tebench.run import outdir
from tebench.schema import protocol
from tebench.store import reader
from tebench.store.writer import Writer, valid_text

CPU = FIXTURES / "cpu-smoke.jsonl"


@pytest.fixture
def no_probe(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the hardware was probed before the input was checked")

    monkeypatch.setattr(detect, "_run_probe", refuse)


@pytest.mark.parametrize("command", [["run"], ["list"], ["ab", "--out", "{t}/ab"]])
def test_an_empty_preset_is_refused_not_taken_for_auto(tmp_path, capsys, no_probe, command):
    argv = [a.format(t=tmp_path) for a in command] + ["--preset", ""]
    if command == ["run"]:
        argv += ["--out", str(tmp_path / "o")]
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert "--preset '': empty" in capsys.readouterr().err


@pytest.mark.parametrize("argv,said", [
    (["list", "--shard", ""], "--shard '': empty; give I/N"),
    (["run", "--shard", " ", "--out", "{t}/o"], "--shard ' ': empty; give I/N"),
    (["history", "add", "{t}/r.jsonl", "--db", ""], "--db '': empty; give a file"),
    (["history", "report", "--db", "", "--out", "{t}/h"], "--db '': empty; give a file"),
    # It made the working directory the compile cache, and called it warm from the files found there.
    (["run", "--compile-cache", "", "--out", "{t}/o"], "--compile-cache '': empty; give a directory"),
])
def test_an_empty_shard_or_database_is_refused_not_taken_for_none_or_here(tmp_path, capsys, no_probe, argv, said):
    """``--shard ''`` must not run every case, and ``--db ''`` must not name the working directory."""
    with pytest.raises(SystemExit) as exc:
        cli.main([a.format(t=tmp_path) for a in argv])
    assert exc.value.code == 2 and said in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_out_on_a_pseudo_file_system_is_refused_before_the_probe(capsys, no_probe):
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc here")
    assert cli.main(["run", "--preset", "smoke", "--out", "/proc/tebench-x"]) == 2
    assert unsaid(capsys.readouterr().err, "--out /proc/tebench-x", "cannot create", "under /proc") == []


def test_a_damaged_base_is_bad_input_and_a_damaged_head_a_failure(tmp_path, capsys):
    records = [json.loads(line) for line in CPU.read_text().splitlines()]
    for r in records:
        if r.get("timing"):
            r["timing"]["samples_ms"] = [0.0] * len(r["timing"]["samples_ms"])
    zero = tmp_path / "zero.jsonl"
    zero.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert cli.main(["compare", str(zero), str(CPU)]) == 2
    err = capsys.readouterr().err
    assert "base" in err and "damaged" in err, err
    assert cli.main(["compare", str(CPU), str(zero)]) == 1


def test_ab_names_the_side_and_flag_of_an_interpreter_that_is_not_python(tmp_path, capsys):
    true = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
    assert cli.main(["ab", "--preset", "smoke", "--base-python", true, "--out", str(tmp_path / "ab")]) == 2
    err = capsys.readouterr().err
    assert unsaid(err, f"--base-python {true}", "base side", "hardware detection", "printed nothing") == [], err


def test_ab_names_an_interpreter_that_fails_without_a_word(tmp_path, capsys):
    false = "/bin/false" if os.path.exists("/bin/false") else "/usr/bin/false"
    assert cli.main(["ab", "--preset", "smoke", "--base-python", false, "--out", str(tmp_path / "ab")]) == 2
    err = capsys.readouterr().err
    assert unsaid(err, f"--base-python {false}", "exited with status 1 and printed nothing",
                  "working Python interpreter") == [] and "([])" not in err, err


def test_a_tebench_folder_in_the_working_directory_does_not_break_detection(tmp_path, monkeypatch):
    fake = tmp_path / "tebench"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('the wrong tebench')\n")
    seen = {}

    def run(cmd, **kwargs):
        seen.update(kwargs)
        return subprocess.CompletedProcess(cmd, 1, "", "stopped here")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(detect.subprocess, "run", run)
    with pytest.raises(detect.ProbeError):
        detect._run_probe(10, None)
    assert os.path.realpath(seen["cwd"]) == os.path.realpath(ROOT)
    with pytest.raises(detect.ProbeError):
        detect._run_probe(10, sys.executable)
    assert seen["cwd"] == os.path.abspath(os.sep)


def test_out_of_space_is_not_fooled_by_threads_probing_at_once(tmp_path):
    answers: list[bool] = []

    def probe() -> None:
        for _ in range(30):
            answers.append(outdir.out_of_space(tmp_path))

    threads = [threading.Thread(target=probe) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [False] * 120
    assert not list(tmp_path.iterdir())


def test_text_of_bytes_that_are_not_utf8_is_written_readable(tmp_path):
    out = "runs/m\udcff\udcfe"  # what sys.argv holds for the bytes b"runs/m\xff\xfe"
    records = [json.loads(line) for line in CPU.read_text().splitlines()]
    records[0]["command"] = ["tebench", "run", "--out", out]
    path = tmp_path / "results.jsonl"
    with Writer(path) as writer:
        for r in records:
            writer.append({k: v for k, v in r.items() if k not in ("schema", "schema_version")})
    run = reader.read(path)
    assert run.header.command and run.header.command[-1] == "runs/m\\xff\\xfe" and len(run.cases) == 11
    assert valid_text({"k\ud800": ["x"]}) == {"k\\ud800": ["x"]}


def test_a_lock_holder_line_of_bytes_that_are_not_utf8(tmp_path):
    with outdir.lock_out(tmp_path, "tebench run --out m\udcff"):
        assert b"m\xff" in (tmp_path / outdir.LOCK_NAME).read_bytes()


def test_cli_merge_into_an_out_of_bytes_that_are_not_utf8(tmp_path, capsys):
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/m\xff")
    assert cli.main(["merge", str(CPU), "--out", out, "--no-report"]) == 0
    assert len(reader.read(out).cases) == 11


@pytest.mark.parametrize("line,kept", [
    ('{"event": "progress", "phase": "measure", "step": 3, "total": 10}\n', True),
    ('{"event": "progress"}\n', False),                       # a workload's JSON without the fields
    ('{"event": "progress", "phase": "x", "step": "3", "total": 10}\n', False),
    ('{"loss": 1.5}\n', False), ('[1, 2]\n', False), ("chatter after JSON\n", False),
    ('{"event": "progress", "step": ' + "9" * 5000 + "}\n", False),  # past the digit limit
    ("[" * 100000 + "\n", False),
])
def test_only_a_complete_progress_message_reaches_the_display(line, kept):
    # What the executor does with a worker's line: parse it, and show it only if it is progress.
    msg = protocol.parse(line)
    assert (msg is not None and msg["event"] == protocol.PROGRESS) == kept


def test_workers_do_not_import_a_tebench_folder_from_the_working_directory():
    from tebench.run.executor import Executor

    class Stub:  # what _child_env reads of an Executor
        opts = type("O", (), {"compile_cache": None, "env": {}})()

    child = Executor._child_env(Stub(), None)
    assert child["PYTHONSAFEPATH"] == "1" and str(ROOT) in child["PYTHONPATH"]


@pytest.mark.parametrize("flag", ["--devices", "--shard"])
def test_an_option_of_thousands_of_digits_is_bad_input(tmp_path, capsys, no_probe, flag):
    # Found by the nightly fuzz profile: --devices 999…9 (5,000 digits) reached int() and exited 70.
    value = "9" * 5000 if flag == "--devices" else "1/" + "9" * 5000
    assert cli.main(["run", "--preset", "smoke", "--out", str(tmp_path / "o"), flag, value]) == 2
    assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize("make,said", [
    (lambda p: p.write_text("x"), "is a file, not a directory"),
    (lambda p: p.symlink_to(p.parent / "gone"), "which does not exist"),
])
def test_a_compile_cache_that_is_a_file_or_a_link_to_nowhere_is_named(tmp_path, capsys, no_probe, make, said):
    """mkdir said "File exists" of both."""
    cache = tmp_path / "cache"
    make(cache)
    assert cli.main(["run", "--compile-cache", str(cache), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert said in err and "File exists" not in err, err


def test_the_default_compile_cache_under_a_file_names_the_variable(tmp_path, capsys, monkeypatch, no_probe):
    # It said "--compile-cache default: cannot create afile/compile", naming an option that was not given.
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("TEBENCH_CACHE_DIR", str(afile))
    assert cli.main(["run", "--preset", "smoke", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"$TEBENCH_CACHE_DIR={afile}" in err and "--compile-cache off" in err, err


@pytest.mark.parametrize("argv", [
    ["run", "--preset", "smoke", "--timeout", "\uff11\uff10"], ["run", "--preset", "smoke", "--timeout", "1_0"],
    ["run", "--preset", "smoke", "--rounds", "\uff13"], ["run", "--preset", "smoke", "--rounds", " 3"],
])
def test_a_number_option_takes_ascii_digits_only(tmp_path, capsys, no_probe, argv):
    """int() and float() read full-width digits, spaces and underscores as a number the user did not write."""
    with pytest.raises(SystemExit) as exc:
        cli.main([*argv, "--out", str(tmp_path / "o")])
    assert exc.value.code == 2 and "ASCII digits" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv", [["compare", "", "{f}"], ["report", "", "--out", "{t}/r"], ["merge", " ", "--out", "{t}/m"]])
def test_an_empty_results_path_is_refused_not_taken_for_the_working_directory(tmp_path, capsys, argv):
    from conftest import FIXTURES

    args = [a.format(t=tmp_path, f=FIXTURES / "cpu-smoke.jsonl") for a in argv]
    assert cli.main(args) == 2
    assert "empty; give a results file or a run folder" in capsys.readouterr().err
