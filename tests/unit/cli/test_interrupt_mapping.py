"""An interrupt is 128+N for every command, even when the code it interrupted turned it into another
error (a reader that takes it for bad input, a cleanup whose own failure replaces it)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from conftest import FIXTURES
from tebench import cli
from tebench.cli import guard
from tebench.cli import merge as merge_cmd
from tebench.cli.usage import UsageError
from tebench.schema.version import SchemaError

CPU = FIXTURES / "cpu-smoke.jsonl"


def _swallowing(sig: int):
    def command(args):
        try:
            os.kill(os.getpid(), sig)
            time.sleep(5)  # the handler raises here, at once
        except BaseException:  # what a reader catching too much does
            raise UsageError("results file: not readable") from None
        return 0
    return command


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_turned_into_bad_input_still_exits_128_plus_n(monkeypatch, tmp_path, capsys, sig):
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler and sig == signal.SIGINT:
        pytest.skip("SIGINT is ignored in this process (started in the background)")
    if signal.getsignal(sig) is signal.SIG_IGN:  # guard.install_signals keeps an ignored signal ignored
        pytest.skip(f"{signal.Signals(sig).name} is ignored in this process (started under nohup)")
    monkeypatch.setattr(merge_cmd, "cmd_merge", _swallowing(sig))
    assert cli.main(["merge", str(CPU), "--out", str(tmp_path / "m")]) == 128 + sig
    assert "not readable" not in capsys.readouterr().err


@pytest.mark.parametrize("interrupt,code", [(KeyboardInterrupt(), 130), (guard.Terminated(signal.SIGTERM), 143)])
def test_an_error_raised_while_handling_an_interrupt_maps_to_the_signal(monkeypatch, tmp_path, interrupt, code):
    def command(args):
        try:
            raise interrupt
        except KeyboardInterrupt:
            raise SchemaError("a line cut short") from None  # context kept, though not shown
    monkeypatch.setattr(merge_cmd, "cmd_merge", command)
    assert cli.main(["merge", str(CPU), "--out", str(tmp_path / "m")]) == code


def test_interrupted_is_none_for_ordinary_errors():
    assert guard.interrupted(ValueError("x")) is None
    assert guard.interrupted(None) is None


def test_a_bad_input_error_is_still_exit_2(monkeypatch, tmp_path, capsys):
    def command(args):
        raise UsageError("plainly bad")
    monkeypatch.setattr(merge_cmd, "cmd_merge", command)
    assert cli.main(["merge", str(CPU), "--out", str(tmp_path / "m")]) == 2
    assert "plainly bad" in capsys.readouterr().err


def test_the_handlers_are_put_back():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    replaced = guard.install_signals()
    guard.restore_signals(replaced)
    assert {s: signal.getsignal(s) for s in before} == before
