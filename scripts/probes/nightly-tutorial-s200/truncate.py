"""A results file cut to its first STEPS steps, to be judged again as the shorter run it contains.

    python truncate.py RUN.jsonl.gz CUT.jsonl STEPS
    tebench merge CUT.jsonl --out DIR --rejudge --no-report

With a constant lr after the warm-up and the same batches in every case, the first ``warmup + STEPS``
entries of a curve are the curve of a STEPS-step run. Every case's curve and its twins' curves are cut;
the stored verdict is dropped so that ``--rejudge`` judges the cut curves, and the held-out validation,
measured at the last step only, is dropped too. The nightly's tutorial size warms up 10 steps.
"""

import gzip
import json
import sys

WARMUP = 10


def main(src: str, dst: str, steps: int) -> None:
    n = WARMUP + steps
    with gzip.open(src, "rt") as f, open(dst, "w") as out:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "case" and r.get("loss") and r["loss"].get("per_step"):
                loss = r["loss"]
                loss["per_step"] = loss["per_step"][:n]
                loss["final"] = loss["per_step"][-1]
                if loss.get("twins"):
                    loss["twins"] = [t[:n] for t in loss["twins"]]
                r["validation"] = None
                r["case"]["settings"]["steps"] = steps
                r["parity"] = None
            out.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
