"""Data-parallel cases on a GPU, through torchrun and NCCL, over one process so that one GPU is enough.

What one process still checks: the launch, the NCCL process group, DDP's and FSDP2's wrapping of
each mode's model, and, for torchao's tensorwise recipe under FSDP2, the weights gathered in FP8
with their scales precomputed after each step. Scaling needs two GPUs (the ``distributed`` preset).
Run on the H200: ``pytest tests/gpu/test_distributed_gpu.py``."""

from __future__ import annotations

import json
import textwrap

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.torchao]

MATRIX = """
name = "dist-one-gpu"
[settings]
steps = 10
warmup = 3
lr = 3e-3
validate = false
[axes]
modes = ["PT-AMP", "AO-FP8"]
parallel = ["single", "ddp", "fsdp2"]
nproc = [1]
[fp8]
recipes = ["tensorwise"]
[sizes.gpt.tiny]
vocab = 96
d_model = 256
heads = 4
layers = 2
ffn = 1024
seq = 128
batch = 16
"""


def test_ddp_and_fsdp2_on_one_gpu_with_torchao_fp8_all_gather(tmp_path, tebench_cli):
    path = tmp_path / "d.toml"
    path.write_text(textwrap.dedent(MATRIX))
    # PT-AMP is the parity reference; torchao's case alone, under DDP and under FSDP2 (the matrix's six cases
    # did not finish within 120 s on the H200).
    expected = ["gpt/tiny/PT-AMP"] + [f"gpt/tiny/AO-FP8/tensorwise{p}" for p in ("", "/ddpx1", "/fsdp2x1")]
    tebench_cli("run", str(path), "--out", str(tmp_path / "r"), "--devices", "0", "--no-report",
                *(a for cid in expected for a in ("--only", cid)), check=True)
    recs = {r["case_id"]: r for r in map(json.loads, (tmp_path / "r" / "results.jsonl").read_text().splitlines())
            if r["type"] == "case"}
    assert set(recs) == set(expected)
    for cid, rec in recs.items():
        assert rec["status"] == "ok", f"{cid}: {rec.get('reason')}"
        losses = rec["loss"]["per_step"]
        assert losses[-1] < losses[0], f"{cid}: loss did not fall ({losses[0]} -> {losses[-1]})"
        if "x1" in cid:
            dist = rec["distributed"]
            assert dist["backend"] == "nccl" and dist["world_size"] == 1, dist
            # One process sees the single-device twin's batches: the curves agree up to GPU nondeterminism.
            twin = recs[cid.rsplit("/", 1)[0]]["loss"]["per_step"][-1]
            assert abs(losses[-1] - twin) <= 0.05 * twin, f"{cid}: final loss {losses[-1]} against {twin}"
            assert rec["parity"]["verdict"] != "n/a", rec["parity"]
    fsdp = recs["gpt/tiny/AO-FP8/tensorwise/fsdp2x1"]
    assert fsdp["setup"]["fp8_fsdp_all_gather"] is True
    assert fsdp["fp8_proof"]["verdict"] == "fp8", fsdp["fp8_proof"]
    assert recs["gpt/tiny/AO-FP8/tensorwise/ddpx1"]["setup"].get("fp8_fsdp_all_gather") in (None, False)
