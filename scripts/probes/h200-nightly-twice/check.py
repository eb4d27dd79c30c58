"""Issue #49's done-when, read from two merged nights: margins, verdicts, and what moved between them.

    python scripts/probes/h200-nightly-twice/check.py NIGHT1.jsonl.gz NIGHT2.jsonl.gz

Per night: every judged case's margin (the one its verdict used, widened or not) as a share of its reference's final loss, against 3% at the GPT
tutorial size and 1% elsewhere; the inconclusive cases at d2048 and above with their reason's first clause
(too early is allowed where the first screen says why); the unmutated PT-AMP, PT-AMP+compile and TE-BF16
cases that did not pass. Then the common cases whose verdict differs between the nights. Exit status 1
when a margin is over its limit or a verdict moved.
"""

import gzip
import json
import sys

PLAIN = ("PT-AMP", "PT-AMP+compile", "TE-BF16")


def cases(path: str) -> dict[tuple[str, int], dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return {(r["case_id"], r.get("round", 0)): r for r in records if r.get("type") == "case"}


def limit(r: dict) -> float:
    return 0.03 if r["case"]["size"] == "tutorial" and r["case"]["workload"] == "gpt" else 0.01


def night(path: str) -> tuple[dict[tuple[str, int], str], int]:
    found = cases(path)
    over = 0
    verdicts = {}
    print(f"== {path}")
    for key, r in sorted(found.items()):
        p = r.get("parity") or {}
        verdict = p.get("verdict")
        if verdict is None:
            continue
        verdicts[key] = verdict
        # margin_rel is the margin the verdict used; margin_share is only the share asked, which a noise
        # floor of more than a quarter of it widens (analysis/equivalence.py, Margin.of).
        share = p.get("margin_rel")
        if verdict != "reference" and share is not None and share > limit(r) + 1e-9:
            over += 1
            print(f"  margin over {limit(r):.0%}: {key[0]}: {share:.2%} ({p.get('margin_source')})")
        if verdict == "inconclusive" and r["case"]["size"] != "tutorial":
            print(f"  inconclusive: {key[0]}: {p.get('reason', '').split(':')[0]}")
        if r["case"]["mode"] in PLAIN and verdict not in ("pass", "reference"):
            print(f"  {r['case']['mode']} not passing: {key[0]}: {verdict}")
    counts = {v: list(verdicts.values()).count(v) for v in sorted(set(verdicts.values()))}
    print(f"  verdicts: {counts}; margins over their limit: {over}")
    return verdicts, over


def main(first: str, second: str) -> int:
    a, over_a = night(first)
    b, over_b = night(second)
    common = sorted(set(a) & set(b))
    moved = [k for k in common if a[k] != b[k]]
    print(f"== {len(common) - len(moved)} of {len(common)} common cases with the same verdict")
    for k in moved:
        print(f"  moved: {k[0]} round {k[1]}: {a[k]} -> {b[k]}")
    return 1 if (moved or over_a or over_b) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
