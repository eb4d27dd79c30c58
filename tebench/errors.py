"""The base of every tebench error, and the errors of a run, importable without the heavier modules.

Every error class tebench defines derives from :class:`TebenchError`, whose ``exit_code`` is the exit
status of a command it ends (:func:`tebench.cli.exit_codes.for_exception` reads it: the one place
that maps an exception to an exit status). This module imports nothing, so the CLI (and every
layer: it is a leaf) can name it before it has imported anything it does not need, and a rejection
costs a fraction of a second.
"""

from __future__ import annotations

EXIT_BAD_INPUT = 2
"""The exit status of bad input or usage: the CLI's refusals, and a missing package (:mod:`tebench.installed`)."""


class TebenchError(Exception):
    """An error tebench raises on purpose: the command ends with :attr:`exit_code` and the message, no traceback.

    Subclasses keep the standard base their callers catch too (``ValueError``, ``RuntimeError``)."""

    exit_code: int = EXIT_BAD_INPUT
    """The exit status of a command this error ends (2: bad input or usage, for every error today)."""


class RunError(TebenchError, RuntimeError):
    """A run that cannot start (e.g. --resume against a different matrix, OUT held by another run)."""


class StorageError(RunError):
    """OUT cannot be written (full disk, read-only file system, a file in the way).

    Raised before a case's record would be lost or mislabelled: the run stops,
    every finished case stays in results.jsonl, and ``--resume`` re-runs the rest.
    """


class OutputPathError(RunError):
    """An output path that names something other than a regular file (a FIFO, a device, a socket): it is
    refused (exit status 2), never replaced by a regular file nor written into."""
