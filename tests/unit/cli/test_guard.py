"""The guard around every command: a crash is one line and a log file with exit 70, a signal is
128+N after cleanup, streams escape what they cannot encode, and PYTHONWARNINGS=error is tolerated."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import FIXTURES, unsaid
from helpers.child_env import env_with_root
from tebench import cli
from tebench.cli import compare as compare_cmd
from tebench.cli import guard

CPU = FIXTURES / "cpu-smoke.jsonl"


def _boom(args):
    raise ValueError("a bug nobody expected")


def test_an_unexpected_exception_exits_70_with_one_line_and_a_log(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(compare_cmd, "cmd_compare", _boom)
    monkeypatch.setattr(guard.tempfile, "tempdir", str(tmp_path))
    code = cli.main(["compare", str(CPU), str(CPU)])
    err = capsys.readouterr().err
    assert code == guard.EXIT_INTERNAL == 70
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert unsaid(err, "tebench compare", "internal error", str(CPU)) == [], err
    assert "ValueError: a bug nobody expected" in err
    logs = list(tmp_path.glob(f"{guard.CRASH_PREFIX}*.log"))
    assert len(logs) == 1 and str(logs[0]) in err
    assert "Traceback" in logs[0].read_text() and "_boom" in logs[0].read_text()


def test_the_crash_log_goes_into_out_when_it_is_a_directory(monkeypatch, tmp_path, capsys):
    from tebench.cli import report as report_cmd

    monkeypatch.setattr(report_cmd, "cmd_report", _boom)
    out = tmp_path / "out"
    out.mkdir()
    assert cli.main(["report", str(CPU), "--out", str(out)]) == 70
    assert str(out) in capsys.readouterr().err
    assert len(list(out.glob(f"{guard.CRASH_PREFIX}*.log"))) == 1


def test_a_crash_with_nowhere_to_log_still_prints_one_line_first(monkeypatch, capsys):
    monkeypatch.setattr(compare_cmd, "cmd_compare", _boom)
    monkeypatch.setattr(guard, "_log_dirs", lambda args: [])
    assert cli.main(["compare", str(CPU), str(CPU)]) == 70
    first, *rest = capsys.readouterr().err.splitlines()
    assert unsaid(first, "internal error", "no log file") == [], first
    assert any("Traceback" in line for line in rest)


@pytest.mark.parametrize("raised,code", [(KeyboardInterrupt(), 130), (guard.Terminated(signal.SIGTERM), 143),
                                         (guard.Terminated(signal.SIGHUP), 129)])
def test_signals_exit_128_plus_n(monkeypatch, capsys, raised, code):
    def interrupted(args):
        raise raised

    monkeypatch.setattr(compare_cmd, "cmd_compare", interrupted)
    assert cli.main(["compare", str(CPU), str(CPU)]) == code


# The child says "ready" from inside the command (OUT locked), then waits: the signal arrives at a
# known point whatever the machine's load.
_WAITING = textwrap.dedent("""
    import sys, time
    from tebench import cli
    from tebench.cli import merge
    from tebench.run import outdir

    def waiting(args):
        with outdir.OutLock(outdir.Path(args.out), "test") as lock:
            lock.hold()
            try:
                print("ready", flush=True)
                time.sleep(120)
            finally:
                print("cleanup ran", flush=True)
        return 0

    merge.cmd_merge = waiting
    sys.exit(cli.main(sys.argv[1:]))
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_runs_the_cleanup_and_exits_128_plus_n(tmp_path, sig):
    # SIGINT at its default, as a terminal gives it: a suite started in the background by a
    # non-interactive shell inherits SIGINT ignored, and Python (like the guard) then keeps ignoring it.
    proc = subprocess.Popen([sys.executable, "-c", _WAITING, "merge", str(CPU), "--out", str(tmp_path / "m")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_with_root(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert "cleanup ran" in out and "Traceback" not in err


def test_an_ascii_terminal_gets_escapes_not_a_crash(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tebench", "compare", str(CPU), str(CPU)], capture_output=True,
                          env=env_with_root(PYTHONIOENCODING="ascii"), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    assert b"\\U0001f" in proc.stdout or b"\\u26aa" in proc.stdout  # the verdict emoji, escaped


def test_pythonwarnings_error_leaves_a_skipped_line_a_warning(tmp_path):
    lines = CPU.read_text().splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    proc = subprocess.run([sys.executable, "-m", "tebench", "compare", str(damaged), str(CPU)], capture_output=True,
                          text=True, env=env_with_root(PYTHONWARNINGS="error"), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "skipped 1 unreadable line" in proc.stderr and "Traceback" not in proc.stderr


def test_report_processes_that_int_refuses_mean_the_default(monkeypatch):
    from tebench import report

    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", "²")
    assert report.draw_all([lambda: None, lambda: None]) == [None, None]
    monkeypatch.setenv("TEBENCH_REPORT_PROCESSES", "9" * 5000)
    assert report.draw_all([lambda: None]) == [None]


def test_describe_input_names_the_files_and_stays_short():
    import argparse

    args = argparse.Namespace(command="report", results=["a.jsonl", "b" * 500], out="x")
    text = guard.describe_input(args)
    assert text.startswith("a.jsonl b") and len(text) <= 200
    assert guard.describe_input(argparse.Namespace(command="env")) == "no input file"
    assert json.dumps(text)  # plain text
