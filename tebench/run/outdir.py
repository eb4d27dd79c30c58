"""The run directory (OUT): checked before a run, locked while one writes it, and what a full disk looks like."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import re
import socket
import time
import uuid
import warnings
from pathlib import Path
from typing import Iterator
from tebench.store import atomic
from tebench.store import reader as results
from tebench.errors import RunError, StorageError


LOCK_NAME = ".lock"
PREVIOUS_NAME = "previous"
"""``OUT/previous/<run id>/``: where a finished run goes when another run is started into its OUT."""
RUN_ENTRIES = ("logs", "report", results.PACKED_NAME, results.RESULTS_NAME)
"""What a run writes into OUT (or a user packed there) and takes along when it is kept aside: the results
file moves last, so until it has, OUT still holds the run."""
MIN_FREE_BYTES = 1 << 20
"""Below this much free space in OUT, a worker that left no result is taken to have hit a full disk."""


def storage_error(what: str, exc: OSError, out: Path, advice: str | None = None) -> StorageError:
    """StorageError naming ``what`` failed and why; ``advice`` (by default: the finished cases are kept, continue
    with --resume) says what to do."""
    reason = f"{errno.errorcode.get(exc.errno, 'OSError')} ({exc.strerror})" if exc.errno else str(exc)
    if advice is None:
        advice = f"Finished cases are kept in {out / results.RESULTS_NAME}; fix the storage and continue with --resume"
    return StorageError(f"{what}: {reason}. {advice}")


def check_out_dir(out: Path) -> None:
    """StorageError unless ``out`` is (or can be created as) a directory."""
    nowhere = atomic.dangling_link(out)
    if nowhere:
        raise StorageError(f"--out {out}: {nowhere}")
    if out.exists() and not out.is_dir():
        what = "a file" if out.is_file() else _kind(out.stat().st_mode)  # /dev/null is no file to replace
        raise StorageError(f"--out {out}: is {what}, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"--out {out}: cannot create the run directory: "
                           f"{errno.errorcode.get(exc.errno or 0, 'OSError')} ({exc.strerror or exc})") from None
    # What a run reads and appends to must be a regular file: a FIFO there would block the run forever
    # (opened for reading by --resume, for appending by the writer), a device would take the records.
    for name in (results.RESULTS_NAME, LOCK_NAME):
        try:
            st = os.lstat(out / name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StorageError(f"--out {out}: cannot look at {name} ({exc.strerror or exc})") from None
        if not stat.S_ISREG(st.st_mode):
            raise StorageError(f"--out {out}: {name} there is {_kind(st.st_mode)}, not a regular file; "
                               "tebench writes its run into regular files only (move it away)")


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, word in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return word
    return "not a regular file"


HOLDER_MAX_BYTES = 400
"""How much of the holder's line (pid, host, time, command) the lock file keeps and a refusal quotes."""


@contextlib.contextmanager
def lock_out(out: Path, command: str = "") -> Iterator[None]:
    """Hold an exclusive lock on ``out`` (``out/.lock``, flock) while a command writes into it.

    Every command that writes into a run directory (run, merge, ab, report and
    compare into one) takes this lock: a second writer is refused at once,
    naming the holder (pid, host, since when, ``command``), instead of
    interleaving its records with the first one's or replacing its file. The
    lock is the kernel's: it goes with the process, so a killed run never
    leaves OUT locked. ``out`` must exist.
    """
    path = out / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise storage_error(f"cannot create the lock file {path}", exc, out) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, HOLDER_MAX_BYTES, 0).decode("utf-8", "replace").strip()
        os.close(fd)
        raise RunError(f"{out} is in use by another tebench run ({holder or 'holder unknown'}); "
                       "wait for it to finish or choose another --out") from None
    line = f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}"
    # surrogateescape: a path of bytes that are not UTF-8 reaches sys.argv as lone surrogates.
    held = (f"{line}: {command}" if command else line).encode("utf-8", "surrogateescape")[:HOLDER_MAX_BYTES - 1]
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, held + b"\n", 0)
    try:
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race a waiting run)


class OutLock:
    """OUT's lock, taken as early as it can be without creating OUT.

    On entry it is taken at once if OUT exists, so a second writer is refused
    before any probe or work; otherwise :meth:`hold` creates OUT and takes it
    when the command is about to write, so a command refused before then
    leaves no new directory behind. Released on exit.
    """

    def __init__(self, out: Path, command: str = ""):
        self.out, self.command = Path(out), command
        self.held = False
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "OutLock":
        if self.out.is_dir():
            self.hold()
        return self

    def hold(self) -> None:
        """Create OUT if need be and lock it; nothing more once held."""
        if self.held:
            return
        check_out_dir(self.out)
        self._stack.enter_context(lock_out(self.out, self.command))
        self.held = True

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` is a run directory: one that holds results or that tebench has locked."""
    if not path.is_dir():
        return False
    if (path / results.RESULTS_NAME).exists() or (path / results.PACKED_NAME).exists():
        return True
    try:  # ".lock" is a common name (pytest's numbered directories have one): ours starts with its holder
        with (path / LOCK_NAME).open("rb") as fh:
            return fh.read(4) == b"pid "
    except OSError:
        return False


def run_dir_of(target: Path) -> Path | None:
    """The run directory that writing ``target`` writes into: ``target`` itself or its parent
    (``OUT/report``, ``OUT/compare.md``), or None when neither is one."""
    target = Path(os.path.abspath(target))
    for candidate in (target, target.parent):
        if is_run_dir(candidate):
            return candidate
    return None


@contextlib.contextmanager
def lock_target(target: Path, command: str = "") -> Iterator[Path | None]:
    """Hold the lock of the run directory ``target`` lies in (see :func:`run_dir_of`) while writing it;
    nothing to lock outside run directories. Yields the locked directory or None."""
    run_dir = run_dir_of(target)
    if run_dir is None:
        yield None
        return
    with lock_out(run_dir, command):
        yield run_dir


def out_of_space(directory: Path) -> bool:
    """Whether ``directory`` is full or unwritable now (a worker's missing result may be why)."""
    try:
        st = os.statvfs(directory)
        if st.f_bavail * st.f_frsize < MIN_FREE_BYTES:
            return True
        # Unique per call: device threads probe at once, and a name shared by the process let one
        # thread unlink the other's file mid-probe, which read as a full disk.
        probe = directory / f".probe-{os.getpid()}-{uuid.uuid4().hex}"
        with probe.open("wb") as fh:
            fh.write(b"\0" * 4096)
            fh.flush()
            os.fsync(fh.fileno())
        probe.unlink()
        return False
    except OSError:
        return True


_SAFE_NAME = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,99}")


def keep_earlier_run(out: Path) -> Path:
    """Move the finished run in ``out`` (its results file, ``logs/`` and ``report/``) to
    ``out/previous/<run id>/``, so that a new run can be written to ``out`` beside it; returns where it went.

    A second ``tebench run --out OUT`` keeps the first run, as pytest-benchmark and asv keep earlier
    results, and ``OUT`` itself always holds the newest run (``tebench report OUT`` reports it). A run
    that did not finish (a case and round of its header unrecorded: it was killed) is not moved:
    RunError says to continue it with ``--resume``. The caller holds OUT's lock.
    """
    path = results.results_path(out)  # results.jsonl, else a results.jsonl.gz the user packed
    with warnings.catch_warnings():  # damaged lines of the earlier run are its report's business
        warnings.simplefilter("ignore")
        run = results.read(path)
    header = run.header
    planned = {(case_id, r) for case_id in header.case_ids or [] for r in range(header.rounds or 1)}
    missing = planned - set(run.latest())
    if missing:
        raise RunError(f"{out} already holds results of a run that did not finish (run {run.run_id or 'unknown'}: "
                       f"{len(planned) - len(missing)} of {len(planned)} case rounds recorded); pass --resume to "
                       "continue that run, or choose another --out")
    name = run.run_id if _SAFE_NAME.fullmatch(run.run_id) else time.strftime(
        "%Y%m%dT%H%M%S", time.localtime(path.stat().st_mtime))
    dest, n = out / PREVIOUS_NAME / name, 2
    # A move cut short (a signal between two renames) left a folder without results: it is completed.
    while dest.exists() and ((dest / results.RESULTS_NAME).exists() or (dest / results.PACKED_NAME).exists()
                             or any((dest / e).exists() and (out / e).exists() for e in RUN_ENTRIES)):
        dest, n = out / PREVIOUS_NAME / f"{name}-{n}", n + 1
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for entry in RUN_ENTRIES:
            if (out / entry).exists():
                os.rename(out / entry, dest / entry)
    except OSError as exc:
        # Not the usual advice: --resume would append to the finished run and run nothing of this one.
        moved = [e for e in RUN_ENTRIES if (dest / e).exists() and not (out / e).exists()]
        raise storage_error(f"cannot keep the earlier run of {out} in {dest}", exc, out,
                            (f"Moved so far: {', '.join(moved)}; " if moved else f"The earlier run is in {out} as it "
                             "was; ") + f"make room for it (move {out / PREVIOUS_NAME} away or fix the storage), then "
                            "run again, without --resume: that run is finished") from None
    return dest
