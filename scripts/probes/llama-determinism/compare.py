"""Two runs of the same cases, step by step: where their loss curves part, and by how much.

    python compare.py A/results.jsonl B/results.jsonl

Per case (and per twin of the reference): the first step whose losses differ at all, the first that
differs by more than 1e-3 nats, the largest difference, the final-window means (the last quarter of the
steps, as the verdicts use) of both, the median step times, and both runs' verdicts and gaps.
"""

import gzip
import json
import statistics
import sys


def cases(path: str) -> dict[str, dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        found = [json.loads(line) for line in f if line.strip()]
    return {r["case_id"]: r for r in found if r.get("type") == "case" and r.get("loss")}


def parted(a: list[float], b: list[float]) -> str:
    n = min(len(a), len(b))
    diff = [abs(a[i] - b[i]) for i in range(n)]
    first = next((i for i, d in enumerate(diff) if d > 0), None)
    big = next((i for i, d in enumerate(diff) if d > 1e-3), None)
    k = max(3, round(0.25 * n))
    wa, wb = statistics.fmean(a[n - k:n]), statistics.fmean(b[n - k:n])
    if first is None:
        return f"bit for bit the same over {n} steps (final window {wa:.4f})"
    return (f"first differs at step {first}, by > 1e-3 at {big}, at most {max(diff):.3g}; final window "
            f"{wa:.4f} vs {wb:.4f} ({wb - wa:+.4f})")


def main(first: str, second: str) -> None:
    a, b = cases(first), cases(second)
    print(f"== {first} vs {second}")
    for cid in sorted(set(a) & set(b)):
        ra, rb = a[cid], b[cid]
        print(f"  {cid}: {parted(ra['loss']['per_step'], rb['loss']['per_step'])}")
        for i, (ta, tb) in enumerate(zip(ra["loss"].get("twins") or [], rb["loss"].get("twins") or [])):
            print(f"    twin {i}: {parted(ta, tb)}")
        ms = [statistics.median(r["timing"]["samples_ms"]) for r in (ra, rb)]
        pa, pb = ra.get("parity") or {}, rb.get("parity") or {}
        print(f"    median step {ms[0]:.1f} vs {ms[1]:.1f} ms; verdict {pa.get('verdict')} "
              f"({pa.get('abs_diff') or 0:+.4f}, floor {pa.get('noise_floor_nats') or 0:.2g}) vs {pb.get('verdict')} "
              f"({pb.get('abs_diff') or 0:+.4f}, floor {pb.get('noise_floor_nats') or 0:.2g})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
