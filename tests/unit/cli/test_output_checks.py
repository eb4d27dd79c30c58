"""What a command writes is checked before its work: ``compare --out`` (a directory, a FIFO or a device in
the way: exit 2 at once) and ``$GITHUB_STEP_SUMMARY`` (a special file is refused naming the variable, and
appending never blocks)."""

from __future__ import annotations

import os
import stat

import pytest

from conftest import FIXTURES, unsaid
from tebench import cli
from tebench.analysis import compare as compare_mod
from tebench.cli import output
from tebench.errors import OutputPathError

CPU = FIXTURES / "cpu-smoke.jsonl"


def _no_comparison(monkeypatch):
    def comparing(*args, **kwargs):
        raise AssertionError("the comparison ran before --out was checked")
    monkeypatch.setattr(compare_mod, "compare", comparing)


def _fifo(path):
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "link loop"])
def test_compare_out_in_the_way_is_refused_before_the_comparison(tmp_path, monkeypatch, capsys, kind):
    _no_comparison(monkeypatch)
    if kind == "fifo":
        out = _fifo(tmp_path / "cmp.md")
    elif kind == "directory":
        out = tmp_path / "cmp.md"
        out.mkdir()
    elif kind == "link loop":
        out = tmp_path / "cmp.md"
        out.symlink_to(out)
    else:
        out = "/dev/null"
    assert cli.main(["compare", str(CPU), str(CPU), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--out {out}" in err and "internal error" not in err, err
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(out).st_mode)  # left as it is


def test_compare_out_a_new_file_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(output.STEP_SUMMARY, raising=False)
    out = tmp_path / "cmp.md"
    assert cli.main(["compare", str(CPU), str(CPU), "--out", str(out)]) == 0
    assert "tebench compare" in out.read_text()


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "link to a fifo", "under a file"])
def test_a_special_step_summary_is_refused_naming_the_variable(tmp_path, monkeypatch, capsys, kind):
    _no_comparison(monkeypatch)
    if kind == "fifo":
        summary = _fifo(tmp_path / "summary.md")
    elif kind == "directory":
        summary = tmp_path / "summary.md"
        summary.mkdir()
    elif kind == "device":
        summary = "/dev/null"
    elif kind == "under a file":
        (tmp_path / "a-file").write_text("x")
        summary = tmp_path / "a-file" / "summary.md"
    else:
        summary = tmp_path / "link.md"
        summary.symlink_to(_fifo(tmp_path / "summary.md"))
    monkeypatch.setenv(output.STEP_SUMMARY, str(summary))
    assert cli.main(["compare", str(CPU), str(CPU)]) == 2
    err = capsys.readouterr().err
    assert f"GITHUB_STEP_SUMMARY={summary}" in err and "internal error" not in err, err


def test_a_json_comparison_leaves_the_step_summary_alone(tmp_path, monkeypatch):
    monkeypatch.setenv(output.STEP_SUMMARY, str(_fifo(tmp_path / "summary.md")))
    assert cli.main(["compare", str(CPU), str(CPU), "--format", "json"]) == 0


def test_the_step_summary_is_appended_through_a_link(tmp_path, monkeypatch):
    real = tmp_path / "real.md"
    real.write_text("earlier step\n")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    monkeypatch.setenv(output.STEP_SUMMARY, str(link))
    assert cli.main(["compare", str(CPU), str(CPU)]) == 0
    text = real.read_text()
    assert text.startswith("earlier step\n") and "tebench compare" in text and link.is_symlink()


def test_appending_to_a_fifo_put_in_place_after_the_check_does_not_block(tmp_path):
    fifo = _fifo(tmp_path / "summary.md")
    with pytest.raises(OutputPathError) as err:  # nothing reads it: opening it to write would block
        output.append_step_summary(fifo, "text")
    assert "GITHUB_STEP_SUMMARY" in str(err.value) and "FIFO" in str(err.value)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(OutputPathError):  # something reads it: opened, then refused on its descriptor
            output.append_step_summary(fifo, "text")
        assert os.read(reader, 100) == b""  # nothing was written into it
    finally:
        os.close(reader)


def test_an_unset_step_summary_is_none(monkeypatch):
    monkeypatch.setenv(output.STEP_SUMMARY, "")
    assert output.step_summary() is None
    monkeypatch.delenv(output.STEP_SUMMARY)
    assert output.step_summary() is None


def _measured(tmp_path, kind):
    """A file that holds measurements, of ``kind``; returns its path and its bytes."""
    import gzip
    import sqlite3

    if kind in ("run lock", "case log"):  # a run folder's own files, beside its results
        run = tmp_path / "run"
        (run / "logs").mkdir(parents=True)
        (run / "results.jsonl").write_bytes(CPU.read_bytes())
        path = run / (".lock" if kind == "run lock" else "logs/gpt-tiny-PT-AMP.log")
        path.write_text("pid 1 host x\n" if kind == "run lock" else "step 3: loss 4.2\n")
        return path, path.read_bytes()
    path = tmp_path / ("h.db" if kind == "history database" else "results.jsonl" + (".gz" if kind == "packed" else ""))
    if kind == "history database":
        with sqlite3.connect(path) as db:
            db.execute("create table t(x)")
    elif kind == "packed":
        path.write_bytes(gzip.compress(CPU.read_bytes()))
    else:
        path.write_bytes(CPU.read_bytes())
    return path, path.read_bytes()


@pytest.mark.parametrize("kind", ["results", "packed", "history database", "run lock", "case log"])
def test_compare_out_over_measurements_is_refused_and_leaves_them(tmp_path, monkeypatch, capsys, kind):
    _no_comparison(monkeypatch)
    out, before = _measured(tmp_path, kind)
    assert cli.main(["compare", str(CPU), str(CPU), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--out {out}" in err and "give another file" in err, err
    assert out.read_bytes() == before


@pytest.mark.parametrize("kind", ["results", "history database"])
def test_a_step_summary_that_holds_measurements_is_refused(tmp_path, monkeypatch, kind):
    path, before = _measured(tmp_path, kind)
    monkeypatch.setenv(output.STEP_SUMMARY, str(path))
    with pytest.raises(OutputPathError, match=rf"{output.STEP_SUMMARY}=.*never appended"):
        output.step_summary()
    assert path.read_bytes() == before


def test_compare_out_over_an_earlier_comparison_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(output.STEP_SUMMARY, raising=False)
    out = tmp_path / "cmp.md"
    out.write_text("an earlier comparison\n")
    assert cli.main(["compare", str(CPU), str(CPU), "--out", str(out)]) == 0
    assert "tebench compare" in out.read_text()


def test_report_of_one_results_file_given_twice_is_refused(tmp_path, capsys):
    """A run folder and its results file, or one path twice: the report set the run beside itself as two sources."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_bytes(CPU.read_bytes())
    for given in ([str(run / "results.jsonl"), str(run)], [str(CPU), str(CPU)]):
        assert cli.main(["report", *given, "--out", str(tmp_path / "rep")]) == 2
        err = capsys.readouterr().err
        assert unsaid(err, given[1], "the same results file as", given[0], "give each run once") == [], err
    assert not (tmp_path / "rep").exists()
