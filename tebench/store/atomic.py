"""Atomic file writes: a reader (or a full disk) never sees half a report.

The content goes to a temporary file in the same directory, which is then
renamed over the target (``os.replace`` is atomic on POSIX). On any failure
the temporary file is removed, so a full disk leaves neither a truncated file
nor a stray ``.tmp`` behind, and the previous version of the file (if any)
stays intact.

Only a regular file is ever replaced (:func:`target`): an output path that names a FIFO, a device
or a socket is refused (:class:`tebench.errors.OutputPathError`, exit 2); it used to be replaced by
a regular file (``--out /dev/full``, run as root, turned the device into a file). A symbolic link is
followed: the file it points to is written (and must be a regular file or not exist), and the link
stays a link.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from tebench.errors import OutputPathError


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def target(path: str | Path) -> Path:
    """The file an output ``path`` writes: ``path`` itself, or where its symbolic links lead.

    IsADirectoryError for a directory; OutputPathError for anything else that is not a regular file
    (a FIFO, a device, a socket), naming the path and what it is. A path that does not exist yet
    (or a link to one) is fine: it is created.
    """
    path = Path(path)
    real = Path(os.path.realpath(path))
    try:
        st = os.stat(real)  # never blocks, even on a FIFO
    except FileNotFoundError:
        return real
    if stat.S_ISDIR(st.st_mode):  # say so about the target, not about the temporary file
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(st.st_mode):
        shown = f"{path} (a link to {real})" if real != path.absolute() else str(path)
        raise OutputPathError(f"{shown}: {_kind(st.st_mode)}; an output is written only to a regular file "
                              "or a new path, never over a special file")
    return real


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (and durably: fsync before the rename)."""
    path = target(path)
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


def dangling_link(path: Path) -> str | None:
    """What to say of ``path`` where it is a symbolic link to nothing (a directory made through it fails with
    "File exists", which names neither the link nor its target); None for anything else."""
    if not path.is_symlink() or path.exists():
        return None
    return (f"a symbolic link to {os.readlink(path)}, which does not exist; create that directory, or remove the "
            "link")
