"""A finished run's verdicts, judged over the whole run and written back into its results file.

While a run goes on, each case is judged against the records before it (the
live line shows that verdict), so a case of round 1 never sees its reference's
later rounds. Those verdicts name no rules, and every reader would judge them
again. When the run ends, :func:`write` judges every case's last record over
the whole run, as a reader would, and writes the verdicts back with the rules
that judged them (``Parity.rules``): reading the file then judges nothing
again. Only those records' lines change; the rest of the file stays byte for
byte. An interrupted run keeps its running verdicts, and readers judge them.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from tebench.analysis import parity
from tebench.errors import TebenchError
from tebench.escape import for_terminal
from tebench.store import reader as results
from tebench.store.writer import replace_lines


def write(path: Path) -> int:
    """Judge the last record of every case and round of the results file ``path`` over the whole file and
    write the verdicts back (atomically); returns how many lines were rewritten (0 where the file could
    not be rewritten exactly, as :func:`replace_lines` says, and stays as it was)."""
    with warnings.catch_warnings():
        # A damaged line is said by every later reader; the run already said what went wrong.
        warnings.simplefilter("ignore")
        run = results.read(path)
    # The last record of each case and round (as Run.latest), with the line it was read from.
    last = {(rec.case_id, rec.round_no): (line, rec) for line, rec in zip(run.case_lines, run.cases)}
    stale = {line: rec for line, rec in last.values() if parity.judgeable(rec) and not parity.current(rec)}
    if not stale:
        return 0
    parity.attach([rec for _, rec in last.values()], list(stale.values()))
    return len(stale) if replace_lines(path, stale) else 0

def write_at_end(path: Path) -> None:
    """:func:`write` at the end of a run: where it fails, the run's records stay as measured and written
    (every reader judges their verdicts again), and a note on stderr says so."""
    try:
        write(path)
    except (OSError, TebenchError) as exc:
        sys.stderr.write(f"note: the run's final verdicts were not written into {for_terminal(path)} "
                         f"({for_terminal(str(exc))}); every reader judges them again\n")
