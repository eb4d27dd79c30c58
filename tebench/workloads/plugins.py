"""User workloads: find a workload that is not built in, and check it before anything runs.

A matrix names a workload in ``[sizes.<workload>.<size>]`` (and in
``[axes] workloads``) in one of three ways:

- a built-in name: ``gpt``, ``llama``, ``distill``, ``module``;
- an import path ``package.module:Name``, imported the way ``python -m``
  would import it: from the current directory and ``PYTHONPATH``;
- the name of an entry point in the group ``tebench.workloads``, declared by an
  installed package (``[project.entry-points."tebench.workloads"]``).

``Name`` may be a class (instantiated without arguments) or an instance. A
workload that cannot be imported, or that lacks part of the protocol, is a
:class:`PluginError` naming the workload, the module path and the cause, so a
run stops (exit 2) before its first case instead of failing half-way. Each
case's worker process resolves the same name the same way: it inherits the
current directory and ``PYTHONPATH``.

The command line shows only the message; the workload's own exception stays
attached as the cause, so a worker that fails to load it, or whose workload
raises in a step, prints the whole traceback into the case's log, and the
record's reason names the workload (:func:`failure_reason`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import os
import signal
import sys
import threading
import typing
from importlib import metadata
from typing import Any, Iterator

from tebench import envvars
from tebench.workloads.spec import KINDS
from tebench.errors import TebenchError

ENTRY_POINT_GROUP = "tebench.workloads"

REQUIRED_METHODS = ("check", "fp8_problem", "tokens_per_step", "flops_per_step",
                    "build", "batches", "loss", "validate")
"""What the runner calls on every workload. ``graph_inputs`` is needed only by
cases with ``graphs = true``, ``params`` and ``description`` only by people."""


class PluginError(TebenchError, ValueError):
    """A user workload that cannot be used; the message names it and says why."""


def load(name: str) -> Any:
    """The workload called ``name``: built in, or a user workload resolved, checked and cached once.

    Built-ins come from the torch-free :data:`tebench.workloads.SPECS` (the
    parent) unless the model code is already loaded (the worker). The cache
    makes every later lookup by ``name`` in either registry find the same object.
    """
    import tebench.workloads as registry

    loaded = registry.__dict__.get("WORKLOADS")
    for table in (loaded, registry.SPECS):
        if table is not None and dict.__contains__(table, name):
            return dict.__getitem__(table, name)
    workload = resolve(name)
    for table in (loaded, registry.SPECS):
        if table is not None:
            dict.__setitem__(table, name, workload)
    return workload


def resolve(name: str) -> Any:
    """Import the user workload ``name`` (an import path or an entry point) and check its protocol."""
    if not isinstance(name, str) or not name:
        raise PluginError(f"a workload name must be a non-empty string, got {name!r}")
    if ":" in name:
        obj, origin = _import_path(name)
    else:
        obj, origin = _entry_point(name)
    workload = _instantiate(obj, name, origin)
    check_protocol(workload, name, origin)
    return workload


def _import_path(spec: str) -> tuple[Any, str]:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise PluginError(f"workload '{spec}': an import path is 'package.module:Name'")
    # The CLI's script directory, not the current one, heads sys.path; the
    # worker (python -m) has the current directory on it. Make both agree.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    limit = import_limit_s()  # a bad TEBENCH_PLUGIN_IMPORT_TIMEOUT is named as such, not as the plugin's failure
    try:
        with isolated(), time_limit(limit):
            module = importlib.import_module(module_name)
    except KeyboardInterrupt:  # Ctrl-C or a termination signal (guard.Terminated): the command's to map
        raise
    except BaseException as exc:  # a plugin's import can fail in any way (SystemExit, asyncio.CancelledError…)
        where = _origin(module_name)
        where = f"from {where}" if where else f"searched the current directory {os.getcwd()} and PYTHONPATH"
        raise PluginError(f"workload '{spec}': cannot import module '{module_name}' ({where}): "
                          f"{_what(exc)}") from exc
    origin = getattr(module, "__file__", None) or module_name
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise PluginError(f"workload '{spec}': module '{module_name}' ({origin}) has no attribute '{attr}'")
        obj = getattr(obj, part)
    return obj, str(origin)


def _origin(module_name: str) -> str | None:
    """The file a module would be imported from, if it can be found at all."""
    try:
        spec = importlib.util.find_spec(module_name)
    except KeyboardInterrupt:
        raise
    except BaseException:  # a parent package that fails to import (in any way), or does not exist
        return None
    return spec.origin if spec is not None else None


def _entry_point(name: str) -> tuple[Any, str]:
    found = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        from tebench.workloads import SPECS

        plugins = sorted(ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP))
        known = ", ".join(list(dict.keys(SPECS)) + plugins)
        raise PluginError(f"unknown workload '{name}' (known: {known}; or an import path 'package.module:Name', "
                          f"or an entry point in the group '{ENTRY_POINT_GROUP}')")
    ep = found[0]
    origin = f"entry point '{ep.name} = {ep.value}'"
    try:
        with isolated():
            return ep.load(), origin
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit, asyncio.CancelledError…: a bad plugin, never a traceback
        raise PluginError(f"workload '{name}': cannot load {origin}: {_what(exc)}") from exc


def _instantiate(obj: Any, name: str, origin: str) -> Any:
    if not isinstance(obj, type):
        return obj
    try:
        with isolated():
            return obj()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit, asyncio.CancelledError…: a bad plugin, never a traceback
        raise PluginError(f"workload '{name}' ({origin}): {obj.__name__}() failed: {_what(exc)}") from exc


def _what(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return (f"it called sys.exit({exc.code!r}) (does it parse the command line or run a script "
                "when imported? guard that with if __name__ == '__main__')")
    if isinstance(exc, ImportTimeout):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


IMPORT_LIMIT_S = 120.0
"""How long a plugin's import may take (``TEBENCH_PLUGIN_IMPORT_TIMEOUT``): generous, since a workload that
imports Transformer Engine takes tens of seconds, but finite: an import that blocks must not hang a nightly."""


# Outside TebenchError on purpose: raised inside the guarded import only, and turned there into the
# PluginError that names the plugin (:func:`_what` gives its message).
class ImportTimeout(Exception):
    """A plugin's import did not finish in its time limit."""


def import_limit_s() -> float:
    """The plugin import's time limit in seconds (``TEBENCH_PLUGIN_IMPORT_TIMEOUT``, 0 to a day; 0: none).

    A value that is not such a number is :class:`tebench.envvars.EnvError` naming the variable, raised
    before the import: nan, inf or 1e300 made a good plugin "cannot import" with the variable unnamed."""
    return envvars.plugin_import_timeout(IMPORT_LIMIT_S)


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`ImportTimeout` in the body after ``seconds`` (SIGALRM: the main thread of a POSIX process
    only; elsewhere, or for ``seconds`` <= 0, no limit). The previous handler and timer are put back."""
    if seconds <= 0 or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(_signum: int, _frame: Any) -> None:
        raise ImportTimeout(f"the import did not finish in {seconds:g} s (TEBENCH_PLUGIN_IMPORT_TIMEOUT)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Run a user workload's import or constructor apart from tebench's own process state.

    It sees a command line of its own (no tebench options to parse or reject), and what it prints
    goes to stderr: the command's stdout is its output (``tebench env --json``, a listing), and a
    torchrun rank's carries the progress messages to the runner. Its working directory is put back.
    """
    argv, cwd = sys.argv[:], os.getcwd()
    sys.argv = [argv[0] if argv else "tebench"]
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.argv = argv
        with contextlib.suppress(OSError):
            os.chdir(cwd)


def failure_reason(name: str, exc: BaseException) -> str | None:
    """A record's reason naming the user workload ``name`` when ``exc`` is its failure, else None.

    Its failure: it could not be loaded (a :class:`PluginError`, whose message names it), or the
    exception passed through the workload's own code (a frame in the files of its top-level
    module or package) on its way up. A built-in workload, or an error that never entered the
    workload's code, gets None: the caller keeps its own wording.
    """
    if isinstance(exc, PluginError):
        return _first_line(str(exc))
    from tebench.workloads import BUILT_IN

    if name in BUILT_IN:
        return None
    roots = _code_roots(name)
    tb = exc.__traceback__
    while tb is not None and roots:
        if os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(roots):
            first = _first_line(str(exc))
            return f"workload '{name}': {type(exc).__name__}" + (f": {first}" if first else "")
        tb = tb.tb_next
    return None


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:500] if lines else ""


def _code_roots(name: str) -> tuple[str, ...]:
    """The files of the user workload ``name``'s code: its package's folders, or its module's file."""
    import tebench.workloads as registry

    workload = None
    for table in (registry.__dict__.get("WORKLOADS"), registry.SPECS):
        if table is not None and dict.__contains__(table, name):
            workload = dict.__getitem__(table, name)
    if workload is None:
        return ()
    top = sys.modules.get(type(workload).__module__.partition(".")[0])
    if top is None or top.__name__ in ("builtins", "tebench"):
        return ()
    folders = getattr(top, "__path__", None)
    if folders is not None:
        return tuple(os.path.join(os.path.abspath(f), "") for f in folders)
    file = getattr(top, "__file__", None)
    return (os.path.abspath(file),) if file else ()


def check_protocol(workload: Any, name: str, origin: str) -> None:
    """Raise PluginError listing everything ``workload`` lacks of the workload protocol."""
    problems = [f"no method '{m}'" for m in REQUIRED_METHODS if not callable(getattr(workload, m, None))]
    size_type = getattr(workload, "size_type", None)
    if not (isinstance(size_type, type) and dataclasses.is_dataclass(size_type)):
        problems.append("'size_type' must be a dataclass (the fields a [sizes] table may set)")
    if not problems:
        try:
            typing.get_type_hints(size_type)  # what every size table is checked against
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a string annotation naming what its module does not define
            problems.append(f"'size_type' {getattr(size_type, '__name__', size_type)} has annotations that cannot be resolved "
                            f"({type(exc).__name__}: {exc})")
    kind = getattr(workload, "kind", "model")
    if kind not in KINDS:
        problems.append(f"'kind' must be one of {', '.join(KINDS)}, not {kind!r}")
    if problems:
        raise PluginError(f"workload '{name}' ({origin}) does not implement the workload protocol: "
                          + "; ".join(problems) + " (see docs/guide/workloads.md)")
