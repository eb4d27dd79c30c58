"""Writing results files: strict JSON Lines, one fsync'd line per record.

A NaN or inf becomes null, listed in the record's ``non_finite`` note, and is
restored on reading (:mod:`tebench.store.reader`).
"""

from __future__ import annotations

import json
import math
import re
import os
from pathlib import Path
from typing import Any, Iterable, Mapping
from tebench import bounded
from tebench.schema import version as versions
from tebench.schema.part import PartBase
from tebench.store.atomic import target, write_bytes


def sanitize(obj: Any, path: tuple = (), notes: list[dict[str, Any]] | None = None) -> Any:
    """``obj`` with every NaN/inf float replaced by None; each replacement noted in ``notes``.

    JSON has no NaN: strict readers (jq, browsers, most languages) reject the
    bare ``NaN`` Python writes by default. The note keeps the reason, so
    :func:`read` restores the value and a reader sees it was not finite.
    """
    if isinstance(obj, float) and not math.isfinite(obj):
        if notes is not None:
            notes.append({"path": list(path), "value": repr(obj)})
        return None
    if isinstance(obj, dict):
        return {k: sanitize(v, path + (k,), notes) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [sanitize(v, path + (i,), notes) for i, v in enumerate(obj)]
    return obj


CASE_LINE_START = b'{"schema": "%s", "schema_version": %d, "type": "case", "run_id": ' % (
    versions.SCHEMA.encode(), versions.SCHEMA_VERSION)
"""How every case line :class:`Writer` writes of a record with a run id starts (the current schema, the writer's
format): a line read that starts so, and that its record writes back unchanged, is what
:meth:`~tebench.schema.part.PartBase.stored_line` vouches for."""
_STRING = rb'"(?:[^"\\\x00-\x1f]|\\.)*"'
"""A JSON string token: no raw quote, backslash or control character, escapes taken whole."""
_RUN_ID_VALUE = re.compile(_STRING + rb', ')
_SHARD_RUN_ID_LAST = re.compile(rb', "shard_run_id": (?:' + _STRING + rb'|null)\}$')
"""A top-level ``shard_run_id`` as a line's last key (where a merge put it): a string is the line's last token, so
the key before it is the top-level object's."""


def case_line_with_run_ids(line: bytes, run_id: str, shard_run_id: str | None, shard_stored: bool) -> bytes | None:
    """A vouched-for case line (:meth:`~tebench.schema.part.PartBase.stored_line`) as :meth:`Writer.append` writes
    its record once its ``run_id`` and ``shard_run_id`` are set: the line with its run id replaced, and its
    shard run id replaced where it is the line's last key (``shard_stored``: the line holds one) or added at its
    end (a None added is not written, as for a record written anew). None where the line does not start as
    :data:`CASE_LINE_START`, holds its shard run id elsewhere, or either key twice: the record is then written
    anew.

    A merge of 10,000 records spent more time writing each one anew (its parts walked, then encoded) than
    reading it; copying the line costs next to nothing."""
    if not line.startswith(CASE_LINE_START):
        return None
    # A key given twice reads as its last value: a second run id (at any depth, to be safe) would outlive the copy.
    if line.count(b'"run_id": ') != 1 or line.count(b'"shard_run_id": ') > 1:
        return None
    body = line.rstrip()
    old = _RUN_ID_VALUE.match(body, len(CASE_LINE_START))
    if old is None or not body.endswith(b"}"):
        return None
    end = len(body) - 1
    if shard_stored:
        last = _SHARD_RUN_ID_LAST.search(body, old.end())
        if last is None:
            return None
        end = last.start()
    shard = b"" if shard_run_id is None and not shard_stored else b', "shard_run_id": ' + json.dumps(shard_run_id).encode()
    return b"%s%s, %s%s}\n" % (CASE_LINE_START, json.dumps(run_id).encode(), body[old.end():end], shard)


def dumps_strict(obj: Any, **kwargs: Any) -> str:
    """Strict JSON text (RFC 8259): NaN and inf become null."""
    return _dumps(obj, None, **kwargs)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def valid_text(obj: Any) -> Any:
    """``obj`` with every lone surrogate in its text (keys too) written as a backslash escape.

    A path or argument of bytes that are not UTF-8 (``--out $'m\\xff'``) reaches Python as lone
    surrogates; written as such, the record would be refused by every reader as not valid Unicode,
    and a run's header with it would make its whole file unreadable. The original bytes show as
    ``\\xff``.
    """
    if isinstance(obj, str):
        if not _LONE_SURROGATE.search(obj):
            return obj
        try:
            raw = obj.encode("utf-8", "surrogateescape")  # the bytes the OS gave
        except UnicodeEncodeError:
            return obj.encode("utf-8", "backslashreplace").decode("ascii")
        return raw.decode("utf-8", "backslashreplace")
    if isinstance(obj, dict):
        return {valid_text(k): valid_text(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [valid_text(v) for v in obj]
    return obj


def _dumps(obj: Any, notes: list[dict[str, Any]] | None, **kwargs: Any) -> str:
    # Most records hold no NaN: the encoder refuses one (ValueError) and only then is the record
    # walked, which on a long file would otherwise be most of the writing time.
    try:
        text = json.dumps(obj, allow_nan=False, default=_jsonable, **kwargs)
    except ValueError:
        obj = sanitize(obj, (), notes)
        if notes:
            obj["non_finite"] = notes
        text = json.dumps(obj, allow_nan=False, default=_jsonable, **kwargs)
    # An escaped surrogate is usually half of a pair (an emoji); only then is the record walked.
    if kwargs.get("ensure_ascii", True) and _ESCAPED_SURROGATE.search(text):
        fixed = valid_text(obj)
        if fixed != obj:
            text = json.dumps(fixed, allow_nan=False, default=_jsonable, **kwargs)
    return text


class Writer:
    """Appends records durably: each line is flushed and fsync'd before the next case starts.

    ``durable=False`` leaves the fsync to the caller (:func:`write_all` syncs a
    whole file once before its rename: the file does not exist for readers until then).
    """

    def __init__(self, path: Path, durable: bool = True):
        self.path = path
        self.durable = durable
        path.parent.mkdir(parents=True, exist_ok=True)
        # A previous run killed mid-line would glue our first record to its
        # fragment; start on a fresh line instead.
        needs_newline = path.exists() and path.stat().st_size > 0 and not _ends_with_newline(path)
        self._fh = path.open("a", encoding="utf-8")
        if needs_newline:
            self._fh.write("\n")

    def append(self, record: PartBase | dict[str, Any]) -> None:
        """Write one record (a header or case model, or its JSON object) as a line of strict JSON and fsync
        it. OSError (e.g. ENOSPC) propagates."""
        body = record.to_dict() if isinstance(record, PartBase) else record
        self.append_line(_dumps({"schema": versions.SCHEMA, "schema_version": versions.SCHEMA_VERSION, **body}, [])
                         + "\n")

    def append_line(self, line: str) -> None:
        """Write one line already in the writer's format (ending with its newline), as :meth:`append` writes."""
        try:
            self._fh.write(line)
            if self.durable:
                self.sync()
        except OSError:
            # The line may be on disk in part; the next writer starts a fresh
            # line (see __init__) and readers skip the fragment.
            self._failed = True
            raise

    def sync(self) -> None:
        """Flush and fsync what was written. OSError propagates."""
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        try:
            self._fh.close()
        except OSError:
            if not getattr(self, "_failed", False):
                raise

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def write_all(path: Path, records: Iterable[PartBase | dict[str, Any] | bytes]) -> None:
    """Write a complete results file atomically (used by merge): a temp file, then a rename; only a
    regular file is replaced (:func:`tebench.store.atomic.target`). A record given as bytes is a line in the
    writer's format (:func:`case_line_with_run_ids`), written as it is."""
    path = target(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with Writer(tmp, durable=False) as w:
            for record in records:
                if isinstance(record, bytes):
                    w.append_line(record.decode("utf-8"))
                    continue
                body = record.to_dict() if isinstance(record, PartBase) else record
                w.append({k: v for k, v in body.items() if k not in ("schema", "schema_version")})
            w.sync()
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def replace_lines(path: Path, records: Mapping[int, PartBase]) -> bool:
    """Rewrite a plain results file atomically with the line numbered ``n`` (from 1) replaced by
    ``records[n]``, written as :meth:`Writer.append` writes it; every other line is kept byte for byte,
    unreadable ones included. Returns False, and leaves the file as it was, where that cannot be done
    exactly: a gzip-compressed file, or a line too long to be read. Only a regular file is replaced
    (:func:`tebench.store.atomic.target`); OSError propagates."""
    path = target(path)  # before the open: a FIFO would block it
    with path.open("rb") as fh:
        if fh.read(2) == bounded.GZIP_MAGIC:
            return False
    # Held whole, then written by atomic.write_bytes: the caller holds the file's records already, far larger.
    chunks: list[bytes] = []
    for lineno, raw in bounded.iter_lines(path):
        record = records.get(lineno)
        if record is not None:
            body = {"schema": versions.SCHEMA, "schema_version": versions.SCHEMA_VERSION, **record.to_dict()}
            chunks.append((_dumps(body, []) + "\n").encode("utf-8"))
        elif raw is None:  # skipped unread by the bounded reader: it cannot be copied
            return False
        else:
            chunks.append(raw)
    write_bytes(path, b"".join(chunks))
    return True
