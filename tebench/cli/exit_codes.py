"""The one place that maps an exception ending a command to the command's exit status.

The statuses are promises to a script or a CI job (docs/guide/reliability.md): 2 is bad input or usage
(every :class:`tebench.errors.TebenchError` says so through its ``exit_code``, and so does a file that
cannot be read or written), 128+N a signal, 70 anything no command expected (a tebench bug). A
command that returns keeps its own status (0, or 1 and 2 for a gate's verdict).
"""

from __future__ import annotations

from tebench.errors import EXIT_BAD_INPUT, TebenchError

EXIT_OK = 0
"""Success, and a closed pipe (``tebench list | head``): the reader took what it wanted."""

EXIT_INTERNAL = 70
"""An unexpected exception inside tebench (sysexits' EX_SOFTWARE): a bug to report, never a verdict."""

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_OK", "for_exception"]


def for_exception(exc: BaseException) -> int:
    """The exit status of a command that raised ``exc`` (not SystemExit, which carries its own).

    A signal comes first: an interrupt (Ctrl-C, SIGTERM/SIGHUP as :class:`tebench.cli.guard.Terminated`)
    exits 128+N, and so does any error raised while a signal was ending the command (a reader that
    turned the interrupt into "bad input", a cleanup's own failure): an interrupt is never a verdict on
    the input. Then a tebench error's own ``exit_code``; a closed pipe 0; another file that cannot be
    read or written 2; anything else :data:`EXIT_INTERNAL`.
    """
    from tebench.cli import guard  # guard imports this module's constants

    if isinstance(exc, KeyboardInterrupt):
        return guard.signal_exit(exc)
    signalled = guard.interrupted(exc)
    if signalled is not None:
        return signalled
    if isinstance(exc, TebenchError):
        return exc.exit_code
    if isinstance(exc, BrokenPipeError):
        return EXIT_OK
    if isinstance(exc, OSError):  # a missing file, a full disk, a read-only file system: bad input, not a bug
        return EXIT_BAD_INPUT
    return EXIT_INTERNAL
