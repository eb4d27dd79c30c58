"""Exceptions that are not ``Exception``s: the guard turns them into exit 70 (or SystemExit's own code),
and a plugin raising one at import is a bad plugin (exit 2, named), never a traceback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT
from tebench import cli
from tebench.cli import compare as compare_cmd
from tebench.workloads.plugins import PluginError, resolve

CPU = FIXTURES / "cpu-smoke.jsonl"


class _Odd(BaseException):
    """A BaseException of no standard kind."""


@pytest.mark.parametrize("raised", [asyncio.CancelledError(), GeneratorExit(), _Odd("odd")],
                         ids=["CancelledError", "GeneratorExit", "custom"])
def test_a_base_exception_is_an_internal_error_not_a_traceback(monkeypatch, tmp_path, capsys, raised):
    monkeypatch.setenv("TMPDIR", str(tmp_path))

    def cancelled(args):
        raise raised

    monkeypatch.setattr(compare_cmd, "cmd_compare", cancelled)
    assert cli.main(["compare", str(CPU), str(CPU)]) == 70
    err = capsys.readouterr().err
    assert "internal error" in err and type(raised).__name__ in err and "Traceback" not in err, err


def test_system_exit_keeps_its_own_code(monkeypatch):
    def leaving(args):
        raise SystemExit(5)

    monkeypatch.setattr(compare_cmd, "cmd_compare", leaving)
    with pytest.raises(SystemExit) as exc:
        cli.main(["compare", str(CPU), str(CPU)])
    assert exc.value.code == 5


_CANCEL = "import asyncio\nraise asyncio.CancelledError('cancelled at import')\n"


def test_a_plugin_raising_cancelled_error_at_import_is_a_bad_plugin(tmp_path, monkeypatch):
    (tmp_path / "plug_cancel.py").write_text(_CANCEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(PluginError) as err:
            resolve("plug_cancel:W")
    finally:
        sys.modules.pop("plug_cancel", None)
    assert "plug_cancel" in str(err.value) and "CancelledError" in str(err.value), str(err.value)


def test_a_plugin_raising_cancelled_error_in_its_constructor_is_a_bad_plugin(tmp_path, monkeypatch):
    (tmp_path / "plug_cancel2.py").write_text("import asyncio\nclass W:\n    def __init__(self):\n"
                                              "        raise asyncio.CancelledError()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(PluginError) as err:
            resolve("plug_cancel2:W")
    finally:
        sys.modules.pop("plug_cancel2", None)
    assert "W() failed" in str(err.value) and "CancelledError" in str(err.value), str(err.value)


def test_cli_exits_2_naming_a_plugin_that_raises_cancelled_error(tmp_path):
    (tmp_path / "plug_cancel.py").write_text(_CANCEL)
    (tmp_path / "m.toml").write_text('[sizes."plug_cancel:W".tiny]\nn = 1\n')
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "tebench", "list", "m.toml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert proc.returncode == 2, proc.stderr
    assert "plug_cancel" in proc.stderr and "CancelledError" in proc.stderr and "Traceback" not in proc.stderr
