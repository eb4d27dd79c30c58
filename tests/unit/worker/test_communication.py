"""The communication share and how much compute hid it, from the profiled extra steps' kernel intervals.

Multi-GPU runs fill these on NCCL; here the arithmetic is checked on synthetic intervals and
on the NCCL kernel names the H200 recorded (tests/fixtures/h200x2-distributed.jsonl has none, as
it predates the measurement), and the report's multi-GPU table shows them.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from conftest import FIXTURES  # noqa: E402
from conftest import read_jsonl as lines  # noqa: E402
from conftest import write_jsonl as write  # noqa: E402
from tebench.worker.profile import communication, kernel_table  # noqa: E402

GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def test_exposed_is_the_communication_no_other_kernel_ran_beside():
    # Two steps: compute 0-100 us, an all-reduce 80-130 (20 us hidden); then 200-300 and 300-340 (all exposed).
    events = [(GEMM, 0, 100), (ALLREDUCE, 80, 130), (GEMM, 200, 300), (ALLREDUCE, 300, 340),
              ("Optimizer.step#AdamW.step", 0, 400)]  # an annotation hides nothing
    got = communication(events, steps=2)
    assert got == pytest.approx({"communication_ms": (50 + 40) / 1000 / 2, "communication_exposed_ms": (30 + 40) / 1000 / 2})
    table = kernel_table(events, 2, "test")
    assert table["communication_ms"] == got["communication_ms"]


def test_no_communication_kernel_no_fields():
    assert communication([(GEMM, 0, 10)], steps=1) == {}
    assert "communication_ms" not in kernel_table([(GEMM, 0, 10)], 1, "test")


def test_fully_hidden_communication():
    got = communication([(GEMM, 0, 100), (ALLREDUCE, 10, 60), ("ncclDevKernel_ReduceScatter_Sum", 50, 90)], 1)
    assert got["communication_ms"] == pytest.approx(0.08) and got["communication_exposed_ms"] == 0.0


def test_the_multi_gpu_table_shows_share_and_overlap(tmp_path):
    from tebench import report

    recs = lines(FIXTURES / "h200x2-distributed.jsonl")
    for r in recs:
        if r.get("type") == "case" and r["case_id"].endswith("/ddpx2"):
            r["kernels"] = {"profiled_steps": 1, "union_ms": 100.0, "kernels": [
                {"name": ALLREDUCE, "ms": 20.0, "calls": 4}], "communication_ms": 20.0,
                "communication_exposed_ms": 5.0}
    path = write(tmp_path / "dist.jsonl", recs)
    md = (report.render([path], tmp_path / "rep") / "report.md").read_text()
    section = md.split("Multi-GPU scaling", 1)[1]
    assert all(word in section for word in ("communication share", "hidden by compute")), section[:1500]
    row = next(line for line in section.splitlines() if "gpt/d2048/PT-AMP/ddpx2" in line)
    assert "75.0%" in row  # 15 of 20 ms hidden
    # The fixture as stored (no such measurement) keeps its table.
    plain = (report.render([FIXTURES / "h200x2-distributed.jsonl"], tmp_path / "rep2") / "report.md").read_text()
    assert "communication share" not in plain
