"""The run directory (OUT): checked before a run, locked while one writes it, and what a full disk looks like."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import time
from pathlib import Path
from typing import Iterator
from tebench.store import reader as results
from tebench.errors import RunError, StorageError  # noqa: F401  (raised here, caught by the CLI)


LOCK_NAME = ".lock"
MIN_FREE_BYTES = 1 << 20
"""Below this much free space in OUT, a worker that left no result is taken to have hit a full disk."""


def storage_error(what: str, exc: OSError, out: Path) -> StorageError:
    reason = f"{errno.errorcode.get(exc.errno, 'OSError')} ({exc.strerror})" if exc.errno else str(exc)
    return StorageError(f"{what}: {reason}. Finished cases are kept in {out / results.RESULTS_NAME}; "
                        "fix the storage and continue with --resume")


def check_out_dir(out: Path) -> None:
    """StorageError unless ``out`` is (or can be created as) a directory."""
    if out.exists() and not out.is_dir():
        raise StorageError(f"--out {out}: is a file, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"--out {out}: cannot create the run directory: "
                           f"{errno.errorcode.get(exc.errno or 0, 'OSError')} ({exc.strerror or exc})") from None


@contextlib.contextmanager
def lock_out(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out`` (``out/.lock``, flock) for the duration of a run.

    A second writer is refused at once instead of interleaving its records
    with the first one's. The lock is the kernel's: it goes with the process,
    so a killed run never leaves OUT locked.
    """
    path = out / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise storage_error(f"cannot create the lock file {path}", exc, out) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
        os.close(fd)
        raise RunError(f"{out} is in use by another tebench run ({holder or 'holder unknown'}); "
                       "wait for it to finish or choose another --out") from None
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
                  .encode(), 0)
    try:
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race a waiting run)


def out_of_space(directory: Path) -> bool:
    """Whether ``directory`` is full or unwritable now (a worker's missing result may be why)."""
    try:
        st = os.statvfs(directory)
        if st.f_bavail * st.f_frsize < MIN_FREE_BYTES:
            return True
        probe = directory / f".probe-{os.getpid()}"
        with probe.open("wb") as fh:
            fh.write(b"\0" * 4096)
            fh.flush()
            os.fsync(fh.fileno())
        probe.unlink()
        return False
    except OSError:
        return True
