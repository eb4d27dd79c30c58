"""One base for tebench's errors, one function from an exception to an exit status.

Every exception class a tebench module defines derives from :class:`tebench.errors.TebenchError` (its
``exit_code`` is the command's exit status), and :func:`tebench.cli.exit_codes.for_exception` is the one
place that maps: a tebench error to its ``exit_code`` (2), a signal to 128+N, anything else to 70.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import signal

import pytest

import tebench
from tebench.cli import exit_codes, guard
from tebench.errors import TebenchError

OUTSIDE = {
    # A signal, not an error: KeyboardInterrupt's cleanup runs for it, and it maps to 128+N.
    "tebench.cli.guard.Terminated",
    # Internal control flow that never leaves its module: expand() turns it into a MatrixError.
    "tebench.plan.matrix._Bad",
    # Raised inside a plugin's guarded import only, and turned there into a PluginError.
    "tebench.workloads.plugins.ImportTimeout",
}
"""Exception classes of tebench that are not tebench errors, each for the reason given."""


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined at the top level of a tebench module, by its full name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(tebench.__path__, "tebench."):
        if info.name.endswith("__main__"):  # runs the CLI when imported
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name:
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_tebench_exception_derives_from_the_one_base():
    classes = _exception_classes()
    assert "tebench.cli.usage.UsageError" in classes and len(classes) > len(OUTSIDE) + 15  # the walk found them
    outside = {name for name, cls in classes.items() if not issubclass(cls, TebenchError)}
    assert outside == OUTSIDE, sorted(outside ^ OUTSIDE)


def test_every_tebench_error_exits_2_today():
    for name, cls in _exception_classes().items():
        if issubclass(cls, TebenchError):
            assert cls.exit_code == exit_codes.EXIT_BAD_INPUT == 2, name


def test_the_standard_bases_callers_catch_are_kept():
    from tebench.errors import RunError
    from tebench.plan.matrix import MatrixError
    from tebench.schema.knobs import FieldError

    assert issubclass(MatrixError, ValueError) and issubclass(FieldError, ValueError)
    assert issubclass(RunError, RuntimeError)


def test_a_tebench_error_maps_to_its_exit_code():
    from tebench.plan.shards import ShardError

    assert exit_codes.for_exception(ShardError("--shard 3/2: out of range")) == 2

    class Other(TebenchError):
        exit_code = 9

    assert exit_codes.for_exception(Other("x")) == 9


@pytest.mark.parametrize("exc,code", [
    (KeyboardInterrupt(), 128 + signal.SIGINT),
    (guard.Terminated(signal.SIGTERM), 128 + signal.SIGTERM),
    (guard.Terminated(signal.SIGHUP), 128 + signal.SIGHUP),
])
def test_an_interrupt_maps_to_128_plus_n(exc, code):
    assert exit_codes.for_exception(exc) == code


def test_an_error_raised_while_an_interrupt_was_handled_maps_to_the_signal():
    from tebench.cli.usage import UsageError

    try:
        try:
            raise guard.Terminated(signal.SIGTERM)
        except KeyboardInterrupt:
            raise UsageError("results file: not readable")  # noqa: B904  (the context is the point)
    except UsageError as exc:
        assert exit_codes.for_exception(exc) == 128 + signal.SIGTERM


@pytest.mark.parametrize("exc", [ZeroDivisionError(), KeyError("k"), ValueError("v"), RuntimeError("r"),
                                 GeneratorExit()], ids=lambda e: type(e).__name__)
def test_anything_else_maps_to_70(exc):
    assert exit_codes.for_exception(exc) == exit_codes.EXIT_INTERNAL == guard.EXIT_INTERNAL == 70


def test_files_that_cannot_be_used_map_to_2_and_a_closed_pipe_to_0():
    assert exit_codes.for_exception(FileNotFoundError(2, "No such file or directory", "x.jsonl")) == 2
    assert exit_codes.for_exception(PermissionError(13, "Permission denied", "out")) == 2
    assert exit_codes.for_exception(BrokenPipeError()) == 0


def _refusals():
    from tebench.run.merge import MergeError
    from tebench.schema.knobs import FieldError
    from tebench.schema.version import RecordError
    from tebench.workloads.plugins import PluginError

    return [FieldError("steps", -1, "the refusal's words"), RecordError("", None, "the refusal's words"),
            PluginError("the refusal's words"), MergeError("the refusal's words")]


@pytest.mark.parametrize("raised", _refusals(), ids=lambda e: type(e).__name__)
def test_the_cli_maps_every_tebench_error_through_the_one_function(monkeypatch, capsys, raised):
    # Errors that the CLI's former hand-written list left out (one that escaped exited 70) exit 2 too.
    from conftest import FIXTURES
    from tebench import cli
    from tebench.cli import compare as compare_cmd

    def refusing(args):
        raise raised

    monkeypatch.setattr(compare_cmd, "cmd_compare", refusing)
    cpu = FIXTURES / "cpu-smoke.jsonl"
    assert cli.main(["compare", str(cpu), str(cpu)]) == 2
    err = capsys.readouterr().err
    assert "the refusal's words" in err and "internal error" not in err, err
