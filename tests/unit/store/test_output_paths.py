"""An output path is written only if it is a regular file or does not exist: a FIFO (or a device, a
socket) given as an output is refused with exit 2 and left as it is, never replaced by a regular file.
A symbolic link is followed: the file it points to is replaced, the link stays."""

from __future__ import annotations

import os
import stat

import pytest

from conftest import FIXTURES
from tebench import cli
from tebench.errors import OutputPathError
from tebench.store import atomic

CPU = FIXTURES / "cpu-smoke.jsonl"


def _fifo(path):
    os.mkfifo(path)
    return path


def _is_fifo(path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


def test_atomic_write_refuses_a_fifo_and_leaves_it(tmp_path):
    fifo = _fifo(tmp_path / "out.md")
    with pytest.raises(OutputPathError) as err:
        atomic.write_text(fifo, "text")
    assert str(fifo) in str(err.value) and "FIFO" in str(err.value)
    assert _is_fifo(fifo) and sorted(p.name for p in tmp_path.iterdir()) == ["out.md"]


def test_atomic_write_follows_a_link_to_a_regular_file(tmp_path):
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    atomic.write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_atomic_write_through_a_link_to_a_fifo_is_refused(tmp_path):
    fifo = _fifo(tmp_path / "pipe")
    link = tmp_path / "link.md"
    link.symlink_to(fifo)
    with pytest.raises(OutputPathError) as err:
        atomic.write_text(link, "new")
    assert "link.md" in str(err.value) and str(fifo) in str(err.value)
    assert link.is_symlink() and _is_fifo(fifo)


def test_atomic_write_creates_a_new_file_and_a_directory_is_still_refused(tmp_path):
    atomic.write_text(tmp_path / "new.md", "x")
    assert (tmp_path / "new.md").read_text() == "x"
    with pytest.raises(IsADirectoryError):
        atomic.write_text(tmp_path, "x")


def test_compare_out_a_fifo_exits_2_and_leaves_it(tmp_path, capsys):
    fifo = _fifo(tmp_path / "compare.md")
    assert cli.main(["compare", str(CPU), str(CPU), "--out", str(fifo)]) == 2
    err = capsys.readouterr().err
    assert str(fifo) in err and "FIFO" in err and "Traceback" not in err, err
    assert _is_fifo(fifo)


def test_merge_into_an_out_whose_results_file_is_a_fifo_exits_2(tmp_path, capsys):
    out = tmp_path / "m"
    out.mkdir()
    fifo = _fifo(out / "results.jsonl")
    assert cli.main(["merge", str(CPU), "--out", str(out), "--no-report"]) == 2
    assert "FIFO" in capsys.readouterr().err
    assert _is_fifo(fifo)
