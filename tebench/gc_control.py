"""Python's cycle collector kept off what a long read builds and then keeps.

Records read from a file hold no reference cycles and stay for the whole command, but every
thousand new objects wake the collector, and each of its full passes walks every record read so
far: reading 10,000 records spent two thirds of its time there (docs/findings/speed.md). Both
helpers leave the collector as they found it.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """The heap as it is now left out of every collection until the block ends (in a process forked
    meanwhile, for good); inside a caller's own frozen block, until that one ends."""
    frozen = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not frozen:
            gc.unfreeze()  # it thaws everything frozen: only the outermost block may


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """Python's cycle collector off for the block, then as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
