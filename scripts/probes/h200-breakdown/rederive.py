"""Re-derive ``time_breakdown`` and ``fp8_proof`` of a results file from its stored kernels, with today's rules.

usage: python scripts/probes/h200-breakdown/rederive.py IN.jsonl OUT.jsonl

The records of 2026-12-02's H200 runs were built with the kernel-name rules of
that morning, before the fixture review that followed them, and by a build
that wrote ``time_breakdown.unclassified`` as text. Their measurements
(kernels, module census, timing) are untouched; only the two derived parts
are computed again, as ``tebench report`` does for its tables. Status is left
as recorded.
"""

from __future__ import annotations

import json
import sys

from tebench.analysis.breakdown import breakdown_of
from tebench.run.record_builder import is_fp8_case
from tebench.analysis.breakdown import fp8_proof
from tebench.schema.records import CaseResult, RunHeader


def main(src: str, dst: str) -> int:
    peak = None
    with open(src) as fh, open(dst, "w") as out:
        for line in fh:
            d = json.loads(line)
            if d.get("type") == "header":
                peak = RunHeader.from_dict(d).environment.get("peak_tflops")
            elif d.get("kernels"):
                rec = CaseResult.from_dict({k: v for k, v in d.items() if k not in ("time_breakdown", "fp8_proof")})
                tb = breakdown_of(rec, peak)
                d["time_breakdown"] = tb.to_dict() if tb else None
                if is_fp8_case(rec):
                    d["fp8_proof"] = fp8_proof(rec.kernels, rec.modules).to_dict()
            out.write(json.dumps(d) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
