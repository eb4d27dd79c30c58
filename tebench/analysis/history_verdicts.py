"""Loss-parity verdicts across a history's runs: the cases whose verdict was not the same every night.

A verdict that passes one night and fails the next on the same code says more about the run (a loss spike set
off by nondeterministic kernels, a case on its margin's edge) than about the code, and a nightly's reader must
see which verdicts move before trusting one. Each device's last ``window + 1`` runs are read (the latest and the
window it is judged against, as :mod:`tebench.analysis.history_latest` does); a case's verdict in a run is its
worst ok round's, as the report takes it (:attr:`tebench.analysis.judged_run.CaseRounds.judged`).
"""

from __future__ import annotations

import pandas as pd

from tebench.analysis.judged_run import VERDICT_SEVERITY

COLUMNS = ("device", "case", "verdicts, oldest first", "latest", "runs", "code")
"""The table's columns: the verdict of each run that judged the case, how many runs agreed with the latest, and
the commit those runs ran (one commit: the verdict moved while the code did not)."""


def run_verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (device, run, case) that finished ok with a verdict: the worst of its rounds' (fail, then
    inconclusive, then the last round's), in ``df``'s order of runs (:func:`tebench.store.history.frame`)."""
    ok = df[(df["status"] == "ok") & df["parity"].notna() & (df["parity"] != "")]
    if ok.empty:
        return pd.DataFrame(columns=["device", "run_id", "case_id", "parity"])
    ok = ok.assign(_run=pd.Categorical(ok["run_id"], categories=list(dict.fromkeys(df["run_id"])), ordered=True),
                   _worst=ok["parity"].map(lambda v: VERDICT_SEVERITY.get(v, 0)))
    # The worst round of each run; among equals the last round, as CaseRounds.judged picks it.
    worst = ok.sort_values(["_run", "case_id", "_worst", "round"], kind="stable").groupby(
        ["device", "_run", "case_id"], observed=True, sort=False).tail(1)
    return worst.sort_values(["_run", "case_id"], kind="stable")[["device", "run_id", "case_id", "parity"]]


def moved(df: pd.DataFrame, window: int) -> pd.DataFrame:
    """The cases of each device whose verdict differed between its last ``window + 1`` runs (:data:`COLUMNS`),
    those that differ from the latest run first; empty where every case kept one verdict."""
    verdicts = run_verdicts(df)
    commits = df.drop_duplicates("run_id").set_index("run_id")["git_commit"]
    rows = []
    for device, dev in verdicts.groupby("device", sort=False):
        recent = list(dict.fromkeys(dev["run_id"]))[-(window + 1):]
        for case_id, case in dev[dev["run_id"].isin(recent)].groupby("case_id", sort=True):
            seq = list(case["parity"])
            if len(set(seq)) < 2:
                continue
            latest = seq[-1]
            rows.append({"device": device, "case": case_id, "verdicts, oldest first": " · ".join(seq),
                         "latest": latest, "runs": f"{seq.count(latest)} of {len(seq)} as the latest",
                         "code": _code(commits.reindex(case["run_id"]).tolist()),
                         "_agree": seq.count(latest) / len(seq)})
    if not rows:
        return pd.DataFrame(columns=list(COLUMNS))
    return pd.DataFrame(rows).sort_values(["_agree", "device", "case"], kind="stable")[list(COLUMNS)].reset_index(
        drop=True)


def _code(commits: list[object]) -> str:
    """The commit of the runs, in words: one commit's short hash, "N commits", or "not recorded"."""
    known = list(dict.fromkeys(c for c in commits if isinstance(c, str) and c))
    if not known:
        return "not recorded"
    if len(known) == 1:
        unrecorded = any(not (isinstance(c, str) and c) for c in commits)
        return known[0][:7] + (" (and runs with none recorded)" if unrecorded else "")
    return f"{len(known)} commits"
