"""Every length of several runs of one matrix, judged again: how far each case's gap and verdict move from run to run.

    python spread.py LENGTHS R1.jsonl[.gz] R2.jsonl[.gz] ...      # LENGTHS: 20,24,30 (timed steps)

Each run file is cut to each length (every curve, the twins' too, keeps its first ``len - (steps - LENGTH)``
losses: with the lr constant after its warm-up and the same batches in every case, that is the curve of a
LENGTH-step run), its stored verdicts and held-out validation are dropped, and ``tebench merge --rejudge``
judges it as the code at hand judges. Then, per case and length: each run's gap (case minus reference over
the final window, nats) and verdict, the gaps' spread (max - min) and the margin. A length at which the gaps
spread less, further from the margin's edge, is one at which the verdict repeats from night to night.
"""

import gzip
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def cut(src: str, dst: str, steps: int) -> None:
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f, open(dst, "w") as out:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "case" and r.get("loss") and r["loss"].get("per_step"):
                drop = r["case"]["settings"]["steps"] - steps
                if drop < 0:
                    sys.exit(f"{src}: {r['case_id']} ran {r['case']['settings']['steps']} steps, fewer than {steps}")
                loss = r["loss"]
                loss["per_step"] = loss["per_step"][:len(loss["per_step"]) - drop]
                loss["final"] = loss["per_step"][-1]
                if loss.get("twins"):
                    loss["twins"] = [t[:len(t) - drop] for t in loss["twins"]]
                r["validation"] = None
                r["case"]["settings"]["steps"] = steps
                r["parity"] = None
            out.write(json.dumps(r) + "\n")


def judged(path: str, steps: int, tmp: str) -> dict[str, dict]:
    name = os.path.join(tmp, f"{abs(hash(path))}-{steps}")
    cut(path, name + ".jsonl", steps)
    subprocess.run([sys.executable, "-m", "tebench", "merge", name + ".jsonl", "--out", name, "--rejudge",
                    "--no-report"], check=True, capture_output=True)
    with open(os.path.join(name, "results.jsonl")) as f:
        found = [json.loads(line) for line in f if line.strip()]
    return {r["case_id"]: r["parity"] for r in found if r.get("type") == "case" and r.get("parity")}


def main(lengths: str, paths: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for steps in (int(s) for s in lengths.split(",")):
            runs = [judged(p, steps, tmp) for p in paths]
            print(f"\n{steps} steps")
            for cid in sorted(set.intersection(*(set(r) for r in runs))):
                ps = [r[cid] for r in runs]
                if ps[0].get("verdict") == "reference":
                    ends = " ".join(f"{p.get('final', float('nan')):.3f}" for p in ps)
                    print(f"  {cid:52s} reference, its last recorded loss {ends}")
                    continue
                if "abs_diff" not in ps[0]:
                    continue
                gaps = np.array([p["abs_diff"] for p in ps])
                shown = " ".join(f"{g:+.3f} {p['verdict'][:4]}" for g, p in zip(gaps, ps))
                margins = "/".join(f"{p['margin_nats']:.3f}" for p in ps)
                noise = "/".join(f"{p['noise_nats']:.3f}" for p in ps)
                print(f"  {cid:52s} {shown} | spread {np.ptp(gaps):.3f} sd {np.std(gaps, ddof=1):.3f}"
                      f" | margin {margins} noise {noise}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
