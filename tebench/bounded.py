"""Reading input files with bounds: only regular files, at most so many bytes, never all at once.

Everything tebench reads was named by an operator on a command line, and a
path can name anything: a FIFO (opening it waits for a writer that never
comes), ``/dev/zero`` (reading it never ends), a directory, or a file far
larger than any real one. Each reader here checks what the path is before it
opens it, opens it so that even a FIFO swapped in between cannot block, and
reads no more than the limit for that kind of file. A refusal is an
:class:`InputError` (exit status 2) naming the path and what it is.
"""

from __future__ import annotations

import gzip
import itertools
import os
import stat
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator

from tebench.errors import RunError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

MATRIX_MAX_BYTES = 128 * KiB
"""A matrix file and every file of its ``extends`` chain, together: 25 times the largest preset (5 KB).
tomllib is pure Python; a matrix of this size (about 2,000 sizes) is parsed and checked in about half
a CPU-second on a 2-core machine, so even at the limit a bad matrix is refused well under a second."""
RESULTS_MAX_BYTES = 2 * GiB
"""A results file: the H200 nightly writes 1.8 MB, so this is a thousand such runs in one file (the
reader holds every record in memory, so a file cannot usefully be much larger)."""
RESULTS_MAX_LINES = 4_000_000
"""Lines of a results file, blank ones counted: a record takes at least about 500 bytes, so 2 GiB of records are
fewer. A gzip file of a few MB can hold billions of blank lines, each costing the line loop its time (2e9 took
every reading command past five minutes); at this limit such a file is refused in a few seconds."""
RESULTS_LINE_MAX_BYTES = 64 * MiB
"""One line (record) of a results file: a million step times take about 20 MB. A longer line is
skipped unread (its file:line named), so one damaged line cannot take the memory of the rest."""
BENCHMARK_JSON_MAX_BYTES = 256 * MiB
"""A pytest-benchmark JSON file, parsed whole: the H200 module suite's, every round's times in it, is 66 KB."""
PROBE_CACHE_MAX_BYTES = 1 * MiB
"""A cached probe answer (``~/.cache/tebench/env-*.json``): an H200's is about 5 KB. A larger one, or one that
is not a regular file (a FIFO would block ``tebench list`` forever), is no usable cache: the machine is probed."""
SNIFF_BYTES = 64 * KiB
"""How much of a ``*.json`` file is looked at to tell pytest-benchmark output from a results file."""

_READ_CHUNK = 1 * MiB
GZIP_MAGIC = b"\x1f\x8b"


class InputError(RunError):
    """An input path that is not a regular file, or is larger than the limit for its kind (exit status 2)."""

    def __init__(self, path: str | Path, message: str):
        self.path = str(path)
        super().__init__(f"{path}: {message}")


def _what_it_is(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _size_text(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n} bytes"


def _check(path: str | Path, st: os.stat_result, what: str, limit: int | None) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, f"is {_what_it_is(st.st_mode)}, not a {what}")
    if limit is not None and st.st_size > limit:
        raise InputError(path, f"is {_size_text(st.st_size)}, larger than the {_size_text(limit)} a {what} "
                               "may be")


def check_file(path: str | Path, what: str, limit: int | None = None) -> os.stat_result:
    """The ``stat`` of ``path`` if it is a regular file of at most ``limit`` bytes, else InputError.

    ``what`` names the kind of file in the message ("matrix file"). A path that
    does not exist raises FileNotFoundError, as ``open`` would. Nothing is opened.
    """
    st = os.stat(path)  # follows links; never blocks, even on a FIFO
    _check(path, st, what, limit)
    return st


def open_file(path: str | Path, what: str, limit: int | None = None) -> BinaryIO:
    """Open a regular file of at most ``limit`` bytes for reading (binary), else InputError.

    Checked before opening, and again on the open descriptor: a FIFO put in
    the file's place in between is opened without blocking, then refused.
    """
    check_file(path, what, limit)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        _check(path, os.fstat(fd), what, limit)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, what: str, limit: int) -> bytes:
    """The whole of a regular file of at most ``limit`` bytes (a file that grows past it while read: InputError)."""
    with open_file(path, what, limit) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(path, f"grew beyond the {_size_text(limit)} a {what} may be while it was read")
    return data


def read_head(path: str | Path, what: str, size: int) -> bytes:
    """The first ``size`` bytes (fewer if the file is shorter) of a regular file of any size."""
    with open_file(path, what) as fh:
        return fh.read(size)


def iter_lines(path: str | Path, what: str = "results file", limit: int = RESULTS_MAX_BYTES,
               line_limit: int = RESULTS_LINE_MAX_BYTES,
               max_lines: int = RESULTS_MAX_LINES) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, line)`` for each line of a regular file of at most ``limit`` bytes.

    A line longer than ``line_limit`` bytes comes as ``(line number, None)``:
    it was skipped without being held in memory, and the caller says so with
    ``file:line``. Lines keep their newline. InputError for a path that is not a
    regular file or is larger than ``limit``; also if the file grows past
    ``limit`` while it is read, or holds more than ``max_lines`` lines.

    A gzip-compressed file (it starts with the gzip magic) is read as the text it holds, so that a
    stored run can be kept compressed; ``limit`` then bounds the decompressed bytes too.
    """
    with open_file(path, what, limit) as raw:
        fh: BinaryIO = raw
        magic = raw.read(2)
        raw.seek(0)
        if magic == GZIP_MAGIC:
            fh = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        total = 0
        for lineno in itertools.count(1):
            try:
                line: bytes | None = fh.readline(line_limit + 1)
            except (EOFError, OSError, zlib.error) as exc:  # a truncated or damaged gzip stream
                raise InputError(path, f"its gzip stream is damaged after line {lineno - 1} ({exc})") from None
            if not line:
                return
            if lineno > max_lines:
                raise InputError(path, f"holds more than {max_lines:,} lines, more than a {what} of "
                                       f"{_size_text(limit)} has records (blank or tiny lines?)")
            total += len(line)
            if len(line) > line_limit and not line.endswith(b"\n"):
                # Too long: read on to its end in chunks, keeping none of it.
                while True:
                    chunk = fh.readline(_READ_CHUNK)
                    total += len(chunk)
                    if total > limit:
                        break
                    if not chunk or chunk.endswith(b"\n"):
                        break
                line = None
            if total > limit:
                raise InputError(path, f"grew beyond the {_size_text(limit)} a {what} may be while it was read")
            yield lineno, line

