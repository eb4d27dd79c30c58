"""How far each case's gap moved between two runs, against the noise its verdict used.

    python moves.py A.jsonl[.gz] B.jsonl[.gz]

Per case judged in both: the move of its gap (B minus A), the noise each verdict used (the larger of the
twins' floor and the case's own window standard error), the floor, the own standard error, the lag-1
autocorrelation of the per-step paired differences and their standard deviation, and both verdicts with
the margin. A gap that moves by more than about twice the noise its interval used (Z = 2) can cross the
margin's edge from one night to the next while the gray zone should have absorbed it.
"""

import gzip
import json
import math
import sys

import numpy as np


def load(path: str) -> dict[str, dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        found = [json.loads(line) for line in f if line.strip()]
    return {r["case_id"]: r for r in found if r.get("type") == "case" and r.get("loss") and r.get("parity")}


def paired(run: dict[str, dict], cid: str, window: list[int]) -> np.ndarray:
    """The case's per-step losses minus its reference's over the final window."""
    prefix = "/".join(cid.split("/")[:2]) + "/"
    ref = next(r for c, r in run.items() if c.startswith(prefix) and r["parity"].get("verdict") == "reference")
    case, rc = (np.array(r["loss"]["per_step"], float) for r in (run[cid], ref))
    n = min(case.size, rc.size)
    return case[:n][window[0]:window[1] + 1] - rc[:n][window[0]:window[1] + 1]


def lag1(d: np.ndarray) -> float:
    x = d - d.mean()
    return float(np.sum(x[1:] * x[:-1]) / np.sum(x * x)) if d.size > 2 and np.sum(x * x) > 0 else 0.0


def main(a_path: str, b_path: str) -> None:
    a, b = load(a_path), load(b_path)
    for cid in sorted(set(a) & set(b)):
        pa, pb = a[cid]["parity"], b[cid]["parity"]
        if "abs_diff" not in pa or "abs_diff" not in pb:
            continue
        cols = []
        for run, p in ((a, pa), (b, pb)):
            d = paired(run, cid, p["final_window"])
            sd = float(np.std(d, ddof=1))
            cols.append((p["noise_nats"], p["noise_floor_nats"], sd / math.sqrt(d.size), lag1(d), sd))
        (na, fa, sea, ra, sda), (nb, fb, seb, rb, sdb) = cols
        print(f"{cid:50s} move {pb['abs_diff'] - pa['abs_diff']:+.4f} | noise {na:.4f}/{nb:.4f} floor {fa:.4f}/{fb:.4f}"
              f" own SE {sea:.4f}/{seb:.4f} lag-1 {ra:+.2f}/{rb:+.2f} sd {sda:.4f}/{sdb:.4f}"
              f" | {pa['verdict']}/{pb['verdict']} margin {pa['margin_nats']:.3f}/{pb['margin_nats']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
