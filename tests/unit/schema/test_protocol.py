"""The worker's protocol: its messages, the pipe they travel on, and the thread that reads it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tebench.schema import protocol
from tebench.run.pump import MAX_LINE_BYTES, Pump
from tebench.worker.main import _Progress, protocol_stream


def test_messages_round_trip_and_only_whole_ones_count():
    line = protocol.progress_line("measure", 3, 10, 12.5)
    assert line.endswith("\n") and protocol.parse(line) == {"event": "progress", "phase": "measure", "step": 3,
                                                            "total": 10, "step_ms": 12.5}
    assert protocol.parse(protocol.ready_line()) == {"event": "ready"}
    assert protocol.parse(protocol.ready_line())["event"] != protocol.PROGRESS
    assert protocol.parse('{"event": "ready", "extra": 1}') is None
    assert protocol.parse("chatter") is None


def _collect(fd: int) -> tuple[Pump, list[str]]:
    lines: list[str] = []
    return Pump(fd, lines.append).start(), lines


def test_the_pump_hands_on_lines_across_writes_and_ends_at_end_of_file():
    read, write = os.pipe()
    pump, lines = _collect(read)
    os.write(write, b"one\ntw")
    os.write(write, b"o\n\xff bad byte\nno newline at the end")
    os.close(write)
    pump.finish(timeout=60)
    assert lines == ["one\n", "two\n", "\ufffd bad byte\n", "no newline at the end"]
    with pytest.raises(OSError):
        os.fstat(read)  # the pump closed what it owned


def test_a_handler_that_raises_does_not_stop_the_pump():
    read, write = os.pipe()
    seen: list[str] = []

    def handle(line: str) -> None:
        seen.append(line)
        raise RuntimeError("display broke")

    pump = Pump(read, handle).start()
    os.write(write, b"a\nb\n")
    os.close(write)
    pump.finish(timeout=60)
    assert seen == ["a\n", "b\n"]


def test_a_line_without_newline_is_handed_on_in_bounded_pieces():
    read, write = os.pipe()
    pump, lines = _collect(read)
    with os.fdopen(write, "wb") as out:
        out.write(b"x" * (MAX_LINE_BYTES * 2 + 5) + b"\n")
    pump.finish(timeout=60)
    # How the reads cut it up is the kernel's; the pieces are bounded by the limit plus one read.
    assert len(lines) > 1 and "".join(lines) == "x" * (MAX_LINE_BYTES * 2 + 5) + "\n"
    assert all(len(line) <= MAX_LINE_BYTES + 65536 for line in lines)


def test_the_pump_stops_after_the_worker_although_its_child_holds_the_pipe():
    # A process the worker forked (a data loader) outlives it with the write end open: no end of file
    # comes, yet once the worker is known to have exited the pump drains what is there and stops.
    read, write = os.pipe()
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], pass_fds=(write,))
    try:
        pump, lines = _collect(read)
        os.write(write, b"last words\n")
        os.close(write)
        pump.finish(timeout=60)
        assert not pump._thread.is_alive() and lines == ["last words\n"]
    finally:
        orphan.kill()
        orphan.wait()


def test_the_worker_writes_to_the_named_pipe_and_hides_it_from_its_children(monkeypatch, capsys):
    read, write = os.pipe()
    monkeypatch.setenv(protocol.PROTOCOL_FD_ENV, str(write))
    os.set_inheritable(write, True)  # as pass_fds leaves it in the worker
    stream = protocol_stream()
    try:
        assert protocol.PROTOCOL_FD_ENV not in os.environ and not os.get_inheritable(write)
        _Progress(True, stream)("build", 0, 4)
    finally:
        stream.close()
    with os.fdopen(read) as pipe:
        assert protocol.parse(pipe.read())["phase"] == "build"
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("named", ["not a number", "999999"])
def test_a_named_descriptor_that_is_no_pipe_falls_back_to_stdout(monkeypatch, capsys, named):
    monkeypatch.setenv(protocol.PROTOCOL_FD_ENV, named)
    assert protocol_stream() is sys.stdout
    err = capsys.readouterr().err
    assert "protocol lines" in err and "stdout" in err, err


def test_a_regular_file_is_not_taken_for_the_pipe(monkeypatch, capsys, tmp_path):
    with (tmp_path / "f").open("w") as f:
        monkeypatch.setenv(protocol.PROTOCOL_FD_ENV, str(f.fileno()))
        assert protocol_stream() is sys.stdout
    assert "is not a pipe" in capsys.readouterr().err


def test_progress_to_a_closed_pipe_is_silenced_not_raised(monkeypatch):
    read, write = os.pipe()
    os.close(read)  # the runner is gone
    monkeypatch.setenv(protocol.PROTOCOL_FD_ENV, str(write))
    stream = protocol_stream()
    progress = _Progress(True, stream)
    progress("build", 0, 4)
    assert progress.enabled is False
    stream.close()  # nothing left over to fail on at exit


@pytest.mark.parametrize("knows", [True, False])
def test_workers_of_a_tebench_from_before_the_pipe_keep_stdout(tmp_path, knows):
    # `tebench ab --base-python` may start another checkout's worker; one whose protocol module does
    # not name the pipe is given none and speaks on stdout, as it always did.
    from helpers.executors import build_executor
    from tebench.run import options

    root = tmp_path / "other"
    (root / "tebench" / "run").mkdir(parents=True)
    for init in (root / "tebench" / "__init__.py", root / "tebench" / "run" / "__init__.py"):
        init.write_text("")
    (root / "tebench" / "run" / "protocol.py").write_text(
        f"PROTOCOL_FD_ENV = {protocol.PROTOCOL_FD_ENV!r}\n" if knows else "EXIT_STORAGE = 75\n")
    ex = build_executor(tmp_path, options.RunOptions(out=tmp_path, env={"PYTHONPATH": str(root)}))
    assert ex._speaks_pipe() is knows
    proc, channel, on_stdout = ex._popen([sys.executable, "-c", "pass"], None, subprocess.DEVNULL, pipe=knows)
    proc.wait()
    os.close(channel)
    assert on_stdout is not knows
