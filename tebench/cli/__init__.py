"""The ``tebench`` command line: a thin layer over plain functions, one module per command.

Every command runs inside one guard (:mod:`tebench.cli.guard`), and one function maps the
exception that ends it to its exit status (:func:`tebench.cli.exit_codes.for_exception`): a
:class:`tebench.errors.TebenchError` exits with its ``exit_code`` (2) and its message; an unexpected
exception exits with ``exit_codes.EXIT_INTERNAL`` (70) and a one-line message, its traceback kept in
a log file; a signal exits 128+N after the usual cleanup.

Each command module has ``add_parser(sub)`` and a ``cmd_*`` function that calls
plain functions tests call directly. Bad input (a broken matrix, an unknown
preset, an unreadable results file) exits with status 2 and a message that
names the file, key and value. Heavy modules are imported inside the ``cmd_*``
functions, after the input is checked, so ``--help`` and refusals stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from tebench import __version__

COMMANDS = ("env", "list_cases", "run", "report", "compare", "ab", "merge", "history")
"""The command modules of ``tebench.cli``, in the order ``--help`` lists them."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, with a suggestion for a misspelt choice: ``tebench reprot`` is answered
    with "did you mean 'report'?" (exit 2, as any usage error). Subcommands' parsers are of this class
    too (``add_subparsers`` makes its parsers of the parent's class), so an action or an option's
    choice gets the same help."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            import difflib

            names = [str(c) for c in choices]
            close = difflib.get_close_matches(str(value), names, n=1)
            if close:
                shown = ", ".join(repr(n) for n in names)
                raise argparse.ArgumentError(
                    action, f"invalid choice: {value!r} (choose from {shown}); did you mean {close[0]!r}?")
        super()._check_value(action, value)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command: each command module adds its own."""
    parser = Parser(
        prog="tebench",
        description="What Transformer Engine (BF16, FP8) buys over plain PyTorch, with loss parity.",
    )
    parser.add_argument("--version", action="version", version=f"tebench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"tebench.cli.{name}").add_parser(sub)
    return parser


def _warn(message, category, filename, lineno, file=None, line=None) -> None:
    # Warnings (e.g. skipped damaged lines of a results file) are messages for
    # the user, not Python diagnostics: no source location.
    from tebench.escape import for_terminal

    print(f"tebench: warning: {for_terminal(message, keep_newlines=True)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tebench`` console script."""
    import warnings

    from tebench.cli import guard

    from tebench import installed

    guard.safe_streams()  # before --help, which prints preset and mode names
    installed.require(installed.PARSER)  # what the parser imports (numpy): missing, a message and exit 2
    parser = build_parser()
    args = parser.parse_args(argv)  # --help and usage errors end here, before any other import
    # Every other package the parent side needs, checked once a command is to run: a reporting box
    # without one gets the remedy and exit 2, not a ModuleNotFoundError and the guard's exit 70.
    installed.require()

    # What _ended imports, imported before the signal handlers are: a SIGTERM during an import there
    # would escape the guard.
    from tebench import errors, escape  # noqa: F401
    from tebench.cli import exit_codes  # noqa: F401

    warnings.showwarning = _warn
    guard.tolerate_warning_errors()
    replaced = guard.install_signals()
    try:
        return _run(args)
    finally:
        guard.restore_signals(replaced)


def _run(args: argparse.Namespace) -> int:
    """The command; an exception it raises becomes the exit status :mod:`tebench.cli.exit_codes` maps it to."""
    try:
        code: int = args.func(args)
    except SystemExit:  # its own exit status, as Python gives it
        raise
    except BaseException as exc:  # noqa: BLE001  (the guard: asyncio.CancelledError too)
        return _ended(args, exc)
    return code


def _ended(args: argparse.Namespace, exc: BaseException) -> int:
    """Say why the command ended by ``exc`` (as its exit status asks) and return that status."""
    from tebench.cli import exit_codes, guard
    from tebench.escape import for_terminal

    code = exit_codes.for_exception(exc)
    if code == exit_codes.EXIT_INTERNAL:
        return guard.report_crash(args, exc)  # anything no command expected
    if code > 128:  # a signal (the shell's 128+N): its cleanup has said what the command left
        return code
    if isinstance(exc, BrokenPipeError):  # e.g. `tebench list | head`
        sys.stderr.close()
    elif isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
        # A file that cannot be read or written (a full disk, a read-only
        # file system, a directory where a file is expected): say which.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"tebench {args.command}: error: {for_terminal(where)}{for_terminal(exc.strerror or exc)}",
              file=sys.stderr)
    else:
        # Messages quote matrices, records and paths: their control characters are shown, not obeyed.
        print(f"tebench {args.command}: error: {for_terminal(exc, keep_newlines=True)}", file=sys.stderr)
    return code
