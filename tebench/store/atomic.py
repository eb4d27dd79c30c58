"""Atomic file writes: a reader (or a full disk) never sees half a report.

The content goes to a temporary file in the same directory, which is then
renamed over the target (``os.replace`` is atomic on POSIX). On any failure
the temporary file is removed, so a full disk leaves neither a truncated file
nor a stray ``.tmp`` behind, and the previous version of the file (if any)
stays intact.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (and durably: fsync before the rename)."""
    path = Path(path)
    if path.is_dir():  # say so about the target, not about the temporary file
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically."""
    write_bytes(path, text.encode(encoding))


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name one file (links, ``..`` and relative paths resolved): what a
    command checks before it writes over a path that may be one of its inputs."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): compare where they point
        return Path(a).resolve() == Path(b).resolve()
