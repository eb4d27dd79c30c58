"""Loss-parity verdicts that moved between runs of the same cases: two nightlies, two machines, a history's nights.

A verdict that passes one night and fails the next on the same code says more about the run (a loss spike set
off by nondeterministic kernels, a case on its margin's edge) than about the code, and a reader must see which
verdicts move before trusting one run's. One rule for the report of runs side by side
(:func:`tebench.report.context.moved_context`) and the history page (:func:`history_table`): a case's verdict in
a run is its judged round's (:attr:`tebench.analysis.judged_run.CaseRounds.judged`: the worst ok round), and
runs where the case ran other settings than in the first of them are another benchmark, left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tebench.analysis import judged_run
from tebench.analysis.parity import JUDGED
from tebench.schema.records import Case, CaseResult
from tebench.store import history


@dataclass(frozen=True)
class Moved:
    """A case whose verdict differed between runs: each run's label and verdict, in the runs' order."""

    case_id: str
    verdicts: list[tuple[str, str]]


def moved(runs: Sequence[tuple[str, Iterable[CaseResult]]]) -> tuple[int, list[Moved]]:
    """Of the cases judged in more than one of ``runs`` (``(label, records)``, in order) with the same settings,
    how many there are, and those whose verdicts differ."""
    seen: dict[str, list[tuple[str, str, Case]]] = {}
    for label, records in runs:
        for case_id, rounds in judged_run.by_case(records).items():
            verdict = rounds.judged.verdict
            if verdict in JUDGED:
                seen.setdefault(case_id, []).append((label, verdict, rounds.case))
    common, out = 0, []
    for case_id in sorted(seen):
        first = seen[case_id][0][2]
        same = [(label, verdict) for label, verdict, case in seen[case_id] if case == first]
        if len({label for label, _ in same}) > 1:
            common += 1
            if len({verdict for _, verdict in same}) > 1:
                out.append(Moved(case_id, same))
    return common, out


HISTORY_COLUMNS = ("device", "case", "verdicts, oldest first", "latest", "runs", "code")
"""The history table's columns: the verdict of each run that judged the case, how many runs agreed with the
latest, and the commit those runs ran (one commit: the verdict moved while the code did not)."""


def history_table(db: str | Path, df: pd.DataFrame, window: int) -> pd.DataFrame:
    """The cases of each device whose verdict moved over its last ``window + 1`` runs (the latest and the window
    it is judged against), least agreeing with the latest first (:data:`HISTORY_COLUMNS`). ``df``: the
    database's rows (:func:`tebench.store.history.frame`), oldest run first."""
    rows = []
    if not df.empty:
        runs = df.drop_duplicates("run_id")[["run_id", "device", "git_commit"]]
        commits = runs.set_index("run_id")["git_commit"]
        for device, rg in runs.groupby("device", sort=False):
            recent = list(rg["run_id"])[-(window + 1):]
            by_run: dict[str, list[CaseResult]] = {run_id: [] for run_id in recent}
            for r in history.records(db, recent):
                by_run[r.run_id or ""].append(r)
            for m in moved([(run_id, by_run[run_id]) for run_id in recent])[1]:
                seq = [verdict for _, verdict in m.verdicts]
                latest = seq[-1]
                rows.append({"device": device, "case": m.case_id, "verdicts, oldest first": " · ".join(seq),
                             "latest": latest, "runs": f"{seq.count(latest)} of {len(seq)} as the latest",
                             "code": _code([commits.get(run_id) for run_id, _ in m.verdicts]),
                             "_agree": seq.count(latest) / len(seq)})
    if not rows:
        return pd.DataFrame(columns=list(HISTORY_COLUMNS))
    return pd.DataFrame(rows).sort_values(["_agree", "device", "case"], kind="stable")[
        list(HISTORY_COLUMNS)].reset_index(drop=True)


def _code(commits: list[object]) -> str:
    """The commit of the runs, in words: one commit's short hash, "N commits", or "not recorded"."""
    known = list(dict.fromkeys(c for c in commits if isinstance(c, str) and c))
    if not known:
        return "not recorded"
    if len(known) == 1:
        unrecorded = any(not (isinstance(c, str) and c) for c in commits)
        return known[0][:7] + (" (and runs with none recorded)" if unrecorded else "")
    return f"{len(known)} commits"
