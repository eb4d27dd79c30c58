"""The CPU showcase (reports/cpu-smoke/) is today's smoke preset: the same cases, so the two cannot drift apart
again (it once showed 11 cases when smoke had 19)."""

from __future__ import annotations

from conftest import ROOT
from tebench.plan import matrix
from tebench.report import load


def test_the_cpu_showcase_has_every_case_of_the_smoke_preset():
    planned = {case.id for case in matrix.iter_cases(matrix.load("smoke", is_preset=True))}
    stored = {r.case_id for r in load.load_all([ROOT / "reports" / "cpu-smoke" / "results.jsonl"])[0].records}
    assert stored == planned, ("re-run the showcase: tebench run --preset smoke --out runs/smoke, then copy "
                               "runs/smoke/results.jsonl to reports/cpu-smoke/ and bash scripts/render-reports.sh")
