"""Errors that end a command with exit status 2, importable without the heavier modules.

The CLI catches these before it has imported anything it does not need, so a
rejection costs a fraction of a second.
"""

from __future__ import annotations


class RunError(RuntimeError):
    """A run that cannot start (e.g. --resume against a different matrix, OUT held by another run)."""


class StorageError(RunError):
    """OUT cannot be written (full disk, read-only file system, a file in the way).

    Raised before a case's record would be lost or mislabelled: the run stops,
    every finished case stays in results.jsonl, and ``--resume`` re-runs the rest.
    """


class OutputPathError(RunError):
    """An output path that names something other than a regular file (a FIFO, a device, a socket): it is
    refused (exit status 2), never replaced by a regular file nor written into."""
