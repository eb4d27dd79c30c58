"""Lists of parts read back as typed parts (not the JSON objects they hold), and write back unchanged."""

from __future__ import annotations

import json

from conftest import ROOT, read_jsonl
from tebench.schema.records import CaseResult, Exclusion, KernelTime, RankResult, RunHeader

WARM = ROOT / "reports" / "h200-nightly-warm" / "results.jsonl.gz"
DISTRIBUTED = ROOT / "tests" / "fixtures" / "h200x2-distributed.jsonl"


def test_kernels_and_exclusions_of_a_stored_nightly_are_typed_and_round_trip():
    lines = read_jsonl(WARM)
    header = RunHeader.from_dict(lines[0])
    assert header.excluded and all(isinstance(e, Exclusion) for e in header.excluded)
    assert header.to_dict() == lines[0]
    kernels_seen = 0
    for line in lines[1:]:
        if line.get("type") != "case":
            continue
        rec = CaseResult.from_dict(line)
        if rec.kernels:
            assert all(isinstance(k, KernelTime) for k in rec.kernels.kernels)
            kernels_seen += len(rec.kernels.kernels)
        if rec.time_breakdown and rec.time_breakdown.unclassified:
            assert all(isinstance(k, KernelTime) for k in rec.time_breakdown.unclassified)
        assert json.dumps(rec.to_dict()) == json.dumps(line)  # key order included
    assert kernels_seen > 0


def test_each_rank_of_a_stored_distributed_run_is_typed():
    records = [CaseResult.from_dict(line) for line in read_jsonl(DISTRIBUTED) if line.get("type") == "case"]
    ranks = [r for rec in records if rec.distributed for r in rec.distributed.per_rank or []]
    assert ranks and all(isinstance(r, RankResult) and r.tokens_per_s > 0 for r in ranks)
