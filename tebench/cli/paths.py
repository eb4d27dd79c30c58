"""The paths a command reads and writes, checked before any probe or heavy import: an output option
that cannot be written, an output that is one of the inputs, a results path that is not one."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Iterable

from tebench.cli.usage import UsageError
from tebench.errors import OutputPathError


def _writable_dir(path: Path) -> bool:
    # access() also answers EROFS (a read-only mount), which permission bits do not show.
    return os.access(path, os.W_OK | os.X_OK)


def _try_create_under(existing: Path, flag: str, value: str) -> None:
    """UsageError unless a directory can really be made in ``existing``: access() says yes to root on
    /proc or a pseudo file system, where the later mkdir fails after the hardware was probed."""
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".tebench-check-", dir=existing))
    except OSError as exc:
        raise UsageError(f"{flag} {value}: cannot create it under {existing} ({exc.strerror or exc})") from None


def _try_create_file_in(parent: Path, flag: str, value: str) -> None:
    """UsageError unless a file can really be made in ``parent`` (the atomic write's temporary file
    goes there): as for a directory, access() says yes to root on /proc, and the failure would then
    name the temporary file instead of the option."""
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".tebench-check-", dir=parent)
    except OSError as exc:
        raise UsageError(f"{flag} {value}: cannot create a file in {parent} ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)


def check_out_arg(value: str, flag: str = "--out", kind: str = "dir") -> Path:
    """The path of an output option, refused (UsageError) before any probe or heavy import when it
    cannot be written: empty, a file where a directory is wanted (``kind="dir"``) or the reverse
    (``kind="file"``: a directory, or a FIFO, a device or a socket), or under a directory this process
    cannot write."""
    if not value.strip():
        raise UsageError(f"{flag} {value!r}: empty; give a {'directory' if kind == 'dir' else 'file'} "
                         "(an empty path would write into the current directory)")
    path = Path(value)
    if kind == "dir":
        from tebench.store.atomic import dangling_link  # light, as below

        nowhere = dangling_link(path)
        if nowhere:
            raise UsageError(f"{flag} {value}: {nowhere}")
        if path.exists() and not path.is_dir():
            raise UsageError(f"{flag} {value}: is a file, not a directory")
        if path.is_dir():
            if not _writable_dir(path):
                raise UsageError(f"{flag} {value}: the directory is not writable")
            return path
        existing = path.parent
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise UsageError(f"{flag} {value}: cannot create it: {existing} is a file, not a directory")
        if not _writable_dir(existing):
            raise UsageError(f"{flag} {value}: cannot create it: {existing} is not writable")
        _try_create_under(existing, flag, value)
        return path
    if path.is_dir():
        raise UsageError(f"{flag} {value}: is a directory; give the file to write")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"{flag} {value}: no such directory {parent}")
    from tebench.store import atomic  # light: the atomic writer's own check, before the work

    try:
        atomic.target(path)  # a FIFO, a device or a socket is never written (it would block, or be replaced)
    except OutputPathError as exc:
        raise UsageError(f"{flag} {exc}") from None
    except OSError as exc:  # a loop of links, a name too long: said about the option
        raise UsageError(f"{flag} {value}: {exc.strerror or exc}") from None
    if not _writable_dir(parent):
        raise UsageError(f"{flag} {value}: the directory {parent} is not writable")
    _try_create_file_in(parent, flag, value)
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{flag} {value}: the file is not writable")
    return path


DATA_PEEK = 64 * 1024
"""How much of an existing output file is read to tell whether it holds tebench's data."""


def measured_data(path: Path) -> str | None:
    """What tebench data the existing regular file ``path`` holds, in words (None: none, or no such file): a
    history database, a gzip file (how a run's results are packed), a results file (a line naming the
    results schema within its first :data:`DATA_PEEK` bytes), or a run folder's lock or case log. An output
    written over any of them would lose measurements."""
    from tebench.run.outdir import LOCK_NAME, is_run_dir
    from tebench.schema.version import SCHEMA
    from tebench.store.history_db import SQLITE_MAGIC

    try:
        if not path.is_file():
            return None
        # A run's own files: its lock (replacing it would let a second run write the folder) and its cases' logs
        # (the only account of a case that crashed or hung).
        if path.name == LOCK_NAME and is_run_dir(path.parent):
            return f"the lock of the run folder {path.parent}"
        if path.parent.name == "logs" and is_run_dir(path.parent.parent):
            return f"a case's log of the run folder {path.parent.parent}"
        with open(path, "rb") as f:
            head = f.read(DATA_PEEK)
    except OSError:
        return None  # unreadable: the writer's own checks say why
    if head.startswith(SQLITE_MAGIC):
        return "an SQLite database (a history database, or another program's)"
    if head.startswith(b"\x1f\x8b"):
        return "a gzip file (how a run's results are packed)"
    if f'"{SCHEMA}"'.encode() in head:
        return "a results file (its records name the schema " + SCHEMA + ")"
    return None


def refuse_measured(path: Path, flag: str, value: str) -> None:
    """UsageError if the output ``path`` (a file) already holds measurements (:func:`measured_data`): a typo in an
    output path must not replace a night's results or a history database."""
    held = measured_data(path)
    if held:
        raise UsageError(f"{flag} {value}: is {held}; writing there would replace it: give another file")


def refuse_inputs(targets: Iterable[Path], inputs: Iterable[str], flag: str, value: str) -> None:
    """UsageError if a file the command would write is one of its inputs (a run directory given as
    an input stands for its results file)."""
    from tebench.store.atomic import same_file
    from tebench.store.reader import results_path

    given = [(item, results_path(item)) for item in inputs]
    for target in targets:
        for item, path in given:
            if same_file(target, path):
                raise UsageError(f"{flag} {value}: would overwrite the input {item} ({path}); "
                                 "write somewhere else")


def refuse_repeated(inputs: list[str]) -> None:
    """UsageError if two of ``inputs`` are one results file (a run folder stands for its file): a report would set
    the run beside itself as two machines, and count each case twice."""
    from tebench.store.atomic import same_file
    from tebench.store.reader import results_path

    paths = [results_path(item) for item in inputs]
    for j, later in enumerate(paths):
        for i in range(j):
            if same_file(paths[i], later):
                raise UsageError(f"{inputs[j]}: the same results file as {inputs[i]} ({later}); give each run once")


def _results_like(folder: Path, shown: int = 5) -> str:
    """The files in ``folder`` named as results files are (``*.jsonl``, ``*.jsonl.gz``), in words ("" for none): a
    stored run kept under another name (night1.jsonl.gz) is given by its file."""
    try:
        names = sorted(p.name for p in folder.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")) and p.is_file())
    except OSError:
        return ""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def check_results_paths(paths: list[str]) -> None:
    """Refuse at once (exit 2) a results path that is missing, or is neither a run directory nor a
    regular file of at most the results-file limit: before the modules that read results are imported.

    A run directory stands for the file the reader reads in it (:func:`tebench.store.reader.results_path`:
    ``results.jsonl``, else ``results.jsonl.gz``, how a stored run is kept), so every command that
    takes results accepts the same folders the reader does."""
    from tebench import bounded
    from tebench.store.reader import PACKED_NAME, RESULTS_NAME, results_path

    for given in paths:
        if not given.strip():  # Path('') is the working directory: never a results path the user meant
            raise UsageError(f"results path {given!r}: empty; give a results file or a run folder")
        path = Path(given)
        file = results_path(path)
        packed = path / PACKED_NAME
        if file != packed and packed.is_file() and file.is_file():
            # Said, not refused: `gzip -k` leaves both, and then they hold the same run.
            warnings.warn(f"{given}: holds both {RESULTS_NAME} and {RESULTS_NAME}.gz; reading {RESULTS_NAME} "
                          f"only (give {packed} to read the other)", stacklevel=2)
        try:
            bounded.check_file(file, "results file", bounded.RESULTS_MAX_BYTES)
        except FileNotFoundError:
            if path.is_dir():
                held = _results_like(path)
                raise UsageError(f"{given}: no results file (neither {RESULTS_NAME} nor {RESULTS_NAME}.gz "
                                 f"in {path})" + (f"; it holds {held}: give one of them" if held else "")) from None
            raise UsageError(f"{given}: no results file ({file} does not exist)") from None
