"""Reading a worker's lines (its protocol pipe, or its stdout) in a thread that cannot outlive it.

The thread reads whatever arrives and hands it on line by line. It ends at end of file, or,
once the runner has seen the worker exit, as soon as the pipe holds nothing more: a process the
worker forked (a data loader, a compile pool) may keep the write end open after the worker died,
and a plain blocking read would wait on it forever.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from typing import Callable

MAX_LINE_BYTES = 1 << 20
"""A line longer than this (no newline in a MiB) is handed on in pieces: the buffer stays bounded."""

POLL_S = 0.2
"""How often the thread looks whether the worker has exited while the pipe is quiet."""


class Pump:
    """Reads ``fd`` in a thread and calls ``on_line`` with each line (newline kept, UTF-8 decoded
    with replacement). The pump owns ``fd`` and closes it when done."""

    def __init__(self, fd: int, on_line: Callable[[str], None], name: str = "tebench-pump"):
        self.fd, self.on_line = fd, on_line
        self._exited = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)

    def start(self) -> "Pump":
        """Start reading; returns the pump."""
        self._thread.start()
        return self

    def finish(self, timeout: float = 5.0) -> None:
        """Call once the worker has exited: read what the pipe still holds, then stop (at most ``timeout`` s)."""
        self._exited.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        buffer = b""
        # A selector, not select.select: a long run's descriptor numbers may pass FD_SETSIZE.
        selector = selectors.DefaultSelector()
        try:
            selector.register(self.fd, selectors.EVENT_READ)
            while True:
                exited = self._exited.is_set()
                # After the exit, only what is already in the pipe: a quiet pipe then is a finished one.
                ready = selector.select(0 if exited else POLL_S)
                if not ready:
                    if exited:
                        break
                    continue
                data = os.read(self.fd, 65536)
                if not data:
                    break
                buffer = self._lines(buffer + data)
        except (OSError, ValueError):
            pass  # a descriptor closed under us: nothing more to read
        finally:
            selector.close()
            if buffer:
                self._emit(buffer)
            with contextlib.suppress(OSError):
                os.close(self.fd)

    def _lines(self, buffer: bytes) -> bytes:
        *lines, rest = buffer.split(b"\n")
        for line in lines:
            self._emit(line + b"\n")
        while len(rest) > MAX_LINE_BYTES:
            self._emit(rest[:MAX_LINE_BYTES])
            rest = rest[MAX_LINE_BYTES:]
        return rest

    def _emit(self, raw: bytes) -> None:
        try:
            self.on_line(raw.decode("utf-8", errors="replace"))
        except Exception:  # noqa: BLE001  (a handler's problem must not stop the reading: the pipe would fill)
            pass
