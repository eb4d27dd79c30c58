"""Opening a history database: only tebench's own, and nothing written before that is known.

``--db`` may name any file. An SQLite database of another program must come
out of ``tebench history`` byte for byte as it went in: no tables created,
no switch to WAL, no header stamped. So an existing file is first read as
bytes (is it SQLite at all, cut short, another program's ``application_id``),
then through a read-only connection (its application id and tables); only a
database tebench made is opened for writing. tebench stamps its databases with
:data:`APPLICATION_ID`; one made before the stamp is recognised by its tables
being exactly tebench's, and stamped on the way.

The layout's version is ``PRAGMA user_version`` (:data:`FORMAT_VERSION`). A
database of an older format is upgraded when it is opened, one step of
:data:`UPGRADES` at a time, in one transaction; one of a newer format is
refused as newer (never as damaged) and left as it is.

Torch-, numpy- and pandas-free: the CLI checks ``--db`` with it before the
heavier history module is imported.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from tebench.errors import RunError
from tebench import bounded

SQLITE_MAGIC = b"SQLite format 3\x00"
APPLICATION_ID = 0x74624831
"""``PRAGMA application_id`` of a tebench history database: "tbH1" in ASCII."""
BUSY_TIMEOUT_S = 120.0
FORMAT_VERSION = 1
"""``PRAGMA user_version`` of the databases this tebench makes and reads. A change to the tables
bumps it and adds the step from the version before to :data:`UPGRADES`, so a database of an older
tebench is upgraded and an older tebench says "newer" instead of "damaged"."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created TEXT,
    added TEXT,
    device TEXT,
    matrix TEXT,
    git_commit TEXT,
    header_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cases (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    case_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    device TEXT,
    status TEXT,
    median_ms REAL,
    tokens_per_s REAL,
    memory_bytes REAL,
    final_loss REAL,
    parity TEXT,
    record_json TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, round)
);
CREATE INDEX IF NOT EXISTS cases_by_case ON cases(case_id, device);
"""


class HistoryError(RunError):
    """A ``--db`` that is not a tebench history database, or a damaged one (exit status 2)."""


@dataclass(frozen=True)
class Upgrade:
    """One step of the migration path: a database of format ``source`` becomes one of ``source + 1``.

    ``statements`` run in the transaction that then sets ``user_version``; ``layout`` is the SQL of
    the tables of format ``source``, by which a database of that format is recognised before it is
    upgraded. ``why`` says what changed, for the record.
    """

    source: int
    layout: str
    statements: tuple[str, ...]
    why: str


UPGRADES: tuple[Upgrade, ...] = (
    # Format 0: every database made before 06d0898 set user_version (those made before fca3400 have no
    # application_id either). Their tables are format 1's; the step only records the version.
    Upgrade(0, SCHEMA, (), "the tables of format 1, made before tebench set user_version"),
)
"""The steps from each older format to the next, oldest first; ``UPGRADES[i].source == i``."""


def layout(version: int) -> str:
    """The SQL of the tables of format ``version`` (0 .. :data:`FORMAT_VERSION`)."""
    return SCHEMA if version == FORMAT_VERSION else UPGRADES[version].layout


def _tables(conn: sqlite3.Connection) -> dict[str, list[tuple[str, str]]]:
    """Every table of a database (SQLite's own apart) with its columns' names and declared types."""
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    return {name: [(col[1], col[2]) for col in conn.execute(f"PRAGMA table_info({_quoted(name)})")]
            for name in names}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def expected_tables(version: int = FORMAT_VERSION) -> dict[str, list[tuple[str, str]]]:
    """The tables of format ``version`` (by default :data:`SCHEMA`'s), as :func:`_tables` reads them."""
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        conn.executescript(layout(version))
        return _tables(conn)


def _header_problem(head: bytes, size: int) -> str | None:
    """Why the first 100 bytes of a non-empty file are not those of a whole SQLite database (None: they are)."""
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return f"not an SQLite database (it starts with {head[:16]!r})"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return f"a damaged SQLite database (page size {page_size} in its header)"
    pages = int.from_bytes(head[28:32], "big")
    # The header's page count is valid when its "version-valid-for" equals the change counter.
    if pages and head[92:96] == head[24:28] and size < pages * page_size:
        return (f"a truncated SQLite database: its header counts {pages} pages of {page_size} bytes "
                f"({pages * page_size} bytes), the file has {size}")
    return None


def _header_problem_locked(path: Path) -> str | None:
    """The header's problem read under SQLite's shared lock: "" when it has none there, None when no lock
    could be taken (not SQLite, or still busy after the timeout)."""
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                                timeout=BUSY_TIMEOUT_S)) as conn:
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # takes the shared lock
            head = bounded.read_head(path, "history database (SQLite file)", 100)
            problem = _header_problem(head, path.stat().st_size)
            conn.execute("COMMIT")
    except sqlite3.DatabaseError:
        return None
    return problem or ""


def check(db: str | Path) -> str:
    """What ``db`` is: ``new`` (no file, or an empty one), ``ours`` (a tebench history database of this
    format or an older one, which :func:`connect` upgrades), ``unstamped`` (one made before tebench
    stamped its databases). Anything else, a newer format included, is refused with HistoryError
    (bounded.InputError for a FIFO, a device or a directory), and nothing is written to it.
    """
    name = str(db)
    if name == ":memory:" or name.lower().startswith("file:"):
        # SQLite reads these as an in-memory database or a URI, not as the file of that name: a history
        # added there would be lost, or go into whichever file the URI names, past every check here.
        raise HistoryError(f"{db}: an SQLite URI or in-memory name, not a file; the history is kept in a file: give "
                           f"its path (./{db} for a file of that name)")
    path = Path(db)
    for suffix in ("-wal", "-shm", "-journal"):
        companion = Path(f"{path}{suffix}")
        if companion.exists() and not companion.is_file():
            # SQLite writes the database's journal there and could only say "unable to open database file".
            raise HistoryError(f"{db}: {companion} is not a regular file (a directory?): SQLite keeps the "
                               f"database's {suffix[1:]} file under that name; move it aside")
    try:
        st = bounded.check_file(path, "history database (SQLite file)")
    except FileNotFoundError:
        return "new"
    if st.st_size == 0:
        return "new"  # what SQLite itself makes of an empty file
    head = bounded.read_head(path, "history database (SQLite file)", 100)
    problem = _header_problem(head, st.st_size)
    if problem:
        # Another `history add` may be committing the database's first pages right now: read the
        # header again under a shared lock, which waits for that commit (a foreign file fails to lock
        # and keeps its problem).
        locked = _header_problem_locked(path)
        if locked is not None:
            problem = locked or None
    if problem:
        raise HistoryError(f"{db}: {problem}; refused, and left as it is")
    app = int.from_bytes(head[68:72], "big")
    if app not in (0, APPLICATION_ID):
        raise HistoryError(f"{db}: an SQLite database of another program (application_id 0x{app:08x}), not a "
                           "tebench history database (left as it is)")
    # A read-only connection: it waits for a writer's transaction and sees a consistent database,
    # and cannot change the file.
    try:
        app, version, tables = _probe(path, "ro")
    except sqlite3.DatabaseError as exc:
        journal = Path(f"{path}-journal")
        if not (_read_only(exc) and _nonempty(journal)):
            raise HistoryError(f"{db}: {describe_error(exc, 'cannot read it')}") from None
        # A hot journal: a write was interrupted (a killed `history add`). SQLite rolls it back on the first
        # read that may write, which a read-only connection may not; the database is ours (its header said so),
        # so it is opened for writing once, as `history add` would, and read again read-only.
        try:
            _probe(path, "rw")
            app, version, tables = _probe(path, "ro")
        except sqlite3.DatabaseError as again:
            raise HistoryError(f"{db}: {describe_error(again, 'cannot read it')}; an interrupted write left "
                               f"{journal}, which SQLite rolls back on the next open with write access") from None
    if app == APPLICATION_ID and version > FORMAT_VERSION:
        raise HistoryError(newer_message(db, version))
    if not 0 <= version <= FORMAT_VERSION:
        if app == APPLICATION_ID:
            raise HistoryError(f"{db}: a tebench history database of format {version}, a number no tebench writes; "
                               "changed by another program, or damaged (left as it is)")
        # tebench has always set user_version together with its application_id.
        raise HistoryError(f"{db}: an SQLite database, but not a tebench history database (user_version "
                           f"{version} without tebench's application_id); left as it is")
    want = expected_tables(version)
    if tables == want:
        return "ours" if app == APPLICATION_ID else "unstamped"
    shown = ", ".join(tables) or "none"
    if app == APPLICATION_ID:
        raise HistoryError(f"{db}: a tebench history database whose tables are not those of its format "
                           f"{version} (tables: {shown}); damaged, or changed by another program")
    raise HistoryError(f"{db}: an SQLite database, but not a tebench history database (its tables: {shown}; "
                       f"tebench's are {', '.join(want)}); left as it is")


def _probe(path: Path, mode: str) -> tuple[int, int, dict[str, list[tuple[str, str]]]]:
    """The application id, format version and tables of the SQLite file ``path``, opened with ``mode`` (``ro``,
    or ``rw``: never created)."""
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True,
                                                timeout=BUSY_TIMEOUT_S)) as conn:
            return _identity(conn)
    except sqlite3.DatabaseError as exc:
        if mode != "ro" or not can_read_immutable(path, exc):
            raise
    with contextlib.closing(open_immutable(path)) as conn:
        return _identity(conn)


def _identity(conn: sqlite3.Connection) -> tuple[int, int, dict[str, list[tuple[str, str]]]]:
    return conn.execute("PRAGMA application_id").fetchone()[0], conn.execute("PRAGMA user_version").fetchone()[0], \
        _tables(conn)


def can_read_immutable(path: Path, exc: sqlite3.Error) -> bool:
    """Whether a database that failed to open for reading with ``exc`` may be read as an immutable file.

    tebench's databases are in WAL mode (several jobs add at once), and SQLite reads a WAL database only where
    it can create the ``-shm`` index beside it: on a read-only mount (an archived database, a CI artifact)
    even a read-only connection fails ("unable to open database file"). Nothing can write there, so the file
    is read as it is, unless a non-empty ``-wal`` holds commits not yet in the file (then the error stands).
    """
    name = getattr(exc, "sqlite_errorname", "") or ""  # Python >= 3.11
    if not (name.startswith("SQLITE_CANTOPEN") or "unable to open" in str(exc).lower() or _read_only(exc)):
        return False
    return path.is_file() and not _nonempty(Path(f"{path}-wal")) and _unwritable_folder(path)


def _unwritable_folder(path: Path) -> bool:
    """Whether the folder of ``path`` cannot take a new file: a read-only mount, or no write permission."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY) or not os.access(path.parent, os.W_OK)
    except OSError:
        return False


def open_immutable(path: Path) -> sqlite3.Connection:
    """A read-only connection to ``path`` that takes no locks and reads no WAL (:func:`can_read_immutable`)."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, timeout=BUSY_TIMEOUT_S,
                           isolation_level=None)


def _nonempty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def newer_message(db: str | Path, version: int) -> str:
    """The refusal of a database a newer tebench made: newer, not damaged, and left as it is."""
    return (f"{db}: a history database of a newer tebench (format {version}; this tebench reads up to "
            f"{FORMAT_VERSION}); use that tebench or a newer one (the file is left as it is)")


def describe_error(exc: sqlite3.Error, doing: str) -> str:
    """What an SQLite error says about the database, in words an operator can act on.

    Only corruption is called damage: a read-only mount, a full disk or an I/O error leave an intact
    database that must not be deleted or rebuilt because of a misleading message.
    """
    name = getattr(exc, "sqlite_errorname", "") or ""  # Python >= 3.11
    text = str(exc).lower()
    if _read_only(exc):
        return f"{doing}: the database or its directory is read-only ({exc}); the database is intact"
    if name == "SQLITE_FULL" or "disk is full" in text:
        return f"{doing}: the disk is full ({exc}); the database is intact, nothing was added"
    if name.startswith("SQLITE_IOERR") or "disk i/o error" in text:
        return f"{doing}: an I/O error ({exc}); check the storage (full, read-only or failing) before the database"
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        return f"{doing}: cannot open the file ({exc}); check that its directory exists and is writable"
    if name.startswith("SQLITE_BUSY") or name.startswith("SQLITE_LOCKED") or "locked" in text:
        return f"{doing}: the database is locked by another process ({exc}); try again when it is done"
    return f"a damaged history database ({exc})"


def connect(db: str | Path, create: bool = False) -> sqlite3.Connection:
    """A connection to the tebench history database ``db``; made first when ``create`` and there is none.

    HistoryError, before anything is written, for anything but tebench's own
    database (see :func:`check`); for a missing one unless ``create``.
    """
    state = check(db)
    if state == "new" and not create:
        what = "an empty file, no history database yet" if os.path.exists(db) else "no such history database"
        raise HistoryError(f"{db}: {what} (create it with 'tebench history add')")
    if state == "new" and not Path(db).absolute().parent.is_dir():
        raise HistoryError(f"{db}: no such directory {Path(db).parent} to create the history database in")
    try:
        # As a file URI: SQLite would take some names (":memory:", "file:...") for something other than the file.
        conn = sqlite3.connect(Path(db).resolve().as_uri(), uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise HistoryError(f"{db}: {describe_error(exc, 'cannot open the history database')}") from None
    try:
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        if state == "new":
            # The stamp and the tables in one transaction: a concurrent `history add` that looks at
            # the file meanwhile sees either an empty file or tebench's database, never half of one.
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={FORMAT_VERSION}")
            for statement in filter(str.strip, SCHEMA.split(";")):
                conn.execute(statement)
            conn.execute("COMMIT")
            conn.execute("PRAGMA journal_mode=WAL")  # persistent; several jobs add at once
        else:
            upgrade(conn, db)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if state != "new" and can_read_immutable(Path(db), exc):
            conn = open_immutable(Path(db))  # a WAL database on read-only storage: read as it is
            try:
                upgrade(conn, db)
            except (sqlite3.DatabaseError, HistoryError) as again:
                conn.close()
                if isinstance(again, HistoryError):
                    raise
                raise HistoryError(f"{db}: {describe_error(again, 'cannot read it')}") from None
            return conn
        raise HistoryError(f"{db}: {describe_error(exc, 'cannot open the history database')}") from None
    except HistoryError:
        conn.close()
        raise
    return conn


def upgrade(conn: sqlite3.Connection, db: str | Path) -> int:
    """Bring the open database ``db`` to :data:`FORMAT_VERSION` (and stamp :data:`APPLICATION_ID`);
    the format it had is returned.

    All steps run in one transaction: a database is at its old format or the new one, never
    between, and a concurrent ``history add`` that upgraded it first leaves nothing to do. A
    database that cannot be written (a read-only mount) is read as it is where its tables are the
    current format's; otherwise it is refused, named as older, and left as it is.
    """
    version, app = _format(conn)
    if version == FORMAT_VERSION and app == APPLICATION_ID:
        return version
    try:
        conn.execute("BEGIN IMMEDIATE")  # one writer; the version is read again under its lock
        try:
            version, _ = _format(conn)
            if version > FORMAT_VERSION:  # a newer tebench upgraded it since it was checked
                raise HistoryError(newer_message(db, version))
            for step in UPGRADES[version:]:
                for statement in step.statements:
                    conn.execute(statement)
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={FORMAT_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
    except sqlite3.OperationalError as exc:
        if not _read_only(exc):
            raise
        if expected_tables(version) == expected_tables():
            return version  # read as it is: its tables are the current format's
        raise HistoryError(f"{db}: a history database of an older tebench (format {version}); this tebench "
                           f"upgrades it to format {FORMAT_VERSION} when it can write to it, and cannot: "
                           f"{describe_error(exc, 'cannot upgrade it')}") from None
    return version


def _format(conn: sqlite3.Connection) -> tuple[int, int]:
    """The database's ``user_version`` and ``application_id``."""
    return (conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("PRAGMA application_id").fetchone()[0])


def _read_only(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""  # Python >= 3.11
    text = str(exc).lower()
    return name.startswith("SQLITE_READONLY") or "readonly" in text or "read-only" in text

