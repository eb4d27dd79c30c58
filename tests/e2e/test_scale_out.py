"""Scale-out on the CPU: shards run and merge back, --devices runs cases concurrently,
and data-parallel GPT cases run under torchrun with the gloo backend and 2 processes.

Shards, merge and --devices are the runner's business, not the model's: they run
with the stub worker of ``conftest`` (``stub_cli``). The data-parallel test runs
real workers under torchrun."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import MICRO_DISTILL, unsaid

MATRIX = """
name = "scale-out"
[settings]
steps = 5
warmup = 1
[axes]
modes = ["PT-FP32", "PT-AMP", "TE-FP8"]
[sizes.gpt.micro]
vocab = 16
d_model = 32
heads = 2
layers = 2
ffn = 64
seq = 16
batch = 4
""" + MICRO_DISTILL


@pytest.fixture
def matrix(tmp_path) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(textwrap.dedent(MATRIX))
    return path


def case_records(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "case"]


def test_shards_then_merge_round_trip(matrix, tmp_path, stub_cli):
    whole = stub_cli("list", str(matrix), check=True).stdout
    listed = {line.split()[1] for line in whole.splitlines() if line.startswith("  ")}
    for i in (1, 2):
        stub_cli("run", str(matrix), "--out", str(tmp_path / f"s{i}"), "--shard", f"{i}/2", "--no-report",
                 check=True)
    ids = [{r["case_id"] for r in case_records(tmp_path / f"s{i}" / "results.jsonl")} for i in (1, 2)]
    assert ids[0] and ids[1] and not ids[0] & ids[1] and ids[0] | ids[1] == listed
    proc = stub_cli("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m"),
                    check=True)
    merged = case_records(tmp_path / "m" / "results.jsonl")
    assert {r["case_id"] for r in merged} == listed and len(merged) == len(listed)
    assert len({r["run_id"] for r in merged}) == 1
    # Judged again across shards: PT-AMP finds its PT-FP32 reference even if another shard ran it
    # (5 steps are too few for a pass: inconclusive, but not n/a).
    amp = [r for r in merged if r["case"]["mode"] == "PT-AMP"]
    assert amp and all(r["parity"]["reference_mode"] == "PT-FP32" and r["parity"]["verdict"] == "inconclusive"
                       for r in amp)
    assert (tmp_path / "m" / "report" / "index.html").is_file() and "missing" not in proc.stderr


def test_merge_refuses_mismatched_and_reports_missing(matrix, tmp_path, stub_cli):
    stub_cli("run", str(matrix), "--out", str(tmp_path / "a"), "--shard", "1/3", "--no-report", check=True)
    other = tmp_path / "other.toml"
    other.write_text(textwrap.dedent(MATRIX).replace("steps = 5", "steps = 4"))
    stub_cli("run", str(other), "--out", str(tmp_path / "b"), "--shard", "2/3", "--no-report", check=True)
    proc = stub_cli("merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "m"))
    assert proc.returncode == 2 and "matrix differs" in proc.stderr
    proc = stub_cli("merge", str(tmp_path / "a"), str(tmp_path / "a"), "--out", str(tmp_path / "m"))
    assert proc.returncode == 2 and "given twice" in proc.stderr
    proc = stub_cli("merge", str(tmp_path / "a"), "--out", str(tmp_path / "m"), "--no-report")
    assert proc.returncode == 0 and unsaid(proc.stderr, "missing shard(s)", "2/3", "3/3") == [], proc.stderr
    header = json.loads((tmp_path / "m" / "results.jsonl").read_text().splitlines()[0])
    assert header["missing_shards"] == ["2/3", "3/3"]
    proc = stub_cli("merge", str(tmp_path / "a"), "--out", str(tmp_path / "m2"), "--no-report",
                    "--require-complete")
    assert proc.returncode == 2


def test_merge_refuses_shards_of_two_kinds_of_device(matrix, tmp_path, stub_cli):
    """Shards may run on several machines of one kind; one that ran on another CPU or GPU model would be timed and
    judged against the other's references, under the first shard's name."""
    stub_cli("run", str(matrix), "--out", str(tmp_path / "a"), "--shard", "1/2", "--no-report", check=True)
    stub_cli("run", str(matrix), "--out", str(tmp_path / "b"), "--shard", "2/2", "--no-report", check=True)
    path = tmp_path / "b" / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["env"]["cpu"] = "Intel Xeon Platinum 8480"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = stub_cli("merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "m"))
    assert proc.returncode == 2, proc.stderr
    assert unsaid(proc.stderr, str(tmp_path / "b"), "Intel Xeon Platinum 8480", "one kind of device") == [], proc.stderr
    assert not (tmp_path / "m" / "results.jsonl").exists()


def test_devices_run_cases_concurrently_and_record_the_slot(matrix, tmp_path, stub_cli):
    stub_cli("run", str(matrix), "--out", str(tmp_path / "r"), "--devices", "0,1", "--no-report", check=True)
    recs = [r for r in case_records(tmp_path / "r" / "results.jsonl") if r["status"] == "ok"]
    assert {r["device"]["assigned"] for r in recs} == {"0", "1"}
    assert len(recs) == 4


DIST = """
name = "dist"
[settings]
steps = 5
warmup = 1
[axes]
modes = ["PT-FP32", "PT-AMP"]
parallel = ["single", "ddp", "fsdp2"]
nproc = [2]
[sizes.gpt.micro]
vocab = 16
d_model = 32
heads = 2
layers = 2
ffn = 64
seq = 16
batch = 4
"""


def test_distributed_gpt_with_gloo_two_processes(tmp_path, tebench_cli):
    path = tmp_path / "d.toml"
    path.write_text(textwrap.dedent(DIST))
    # One DDP and one FSDP2 case (each is a torchrun of 2 workers), and their single-process twins.
    only = ["gpt/micro/PT-FP32", "gpt/micro/PT-AMP", "gpt/micro/PT-AMP/ddpx2", "gpt/micro/PT-FP32/fsdp2x2"]
    tebench_cli("run", str(path), "--out", str(tmp_path / "r"), *(a for cid in only for a in ("--only", cid)),
                check=True)
    recs = {r["case_id"]: r for r in case_records(tmp_path / "r" / "results.jsonl")}
    assert set(recs) == set(only)
    for cid in ("gpt/micro/PT-AMP/ddpx2", "gpt/micro/PT-FP32/fsdp2x2"):
        rec = recs[cid]
        assert rec["status"] == "ok", rec.get("reason")
        dist = rec["distributed"]
        assert dist["backend"] == "gloo" and dist["world_size"] == 2 and len(dist["per_rank"]) == 2
        assert dist["aggregate_tokens_per_s"] > 0
        assert rec["parity"]["verdict"] == "n/a"  # global batch differs from the single-process reference
        if rec["case"]["parallel"] == "ddp":
            assert dist["replicas_in_sync"] is True
        assert rec["throughput"]["tokens_per_step"] == 2 * 64
    for rec in recs.values():
        # Progress reached the runner and not the log: on the worker's pipe, or (torchrun: no pipe for
        # the ranks) read from rank 0's stdout.
        assert '"event": "progress"' not in (tmp_path / "r" / rec["log"]).read_text()
    html = (tmp_path / "r" / "report" / "index.html").read_text()
    assert 'id="distributed"' in html and "scaling efficiency" in html


def test_merge_of_two_whole_runs_says_what_merge_joins(matrix, tmp_path, stub_cli):
    # It said "shard 1 given twice" of two nights run without --shard.
    for name in ("night1", "night2"):
        stub_cli("run", str(matrix), "--out", str(tmp_path / name), "--no-report", check=True)
    proc = stub_cli("merge", str(tmp_path / "night1"), str(tmp_path / "night2"), "--out", str(tmp_path / "m"))
    assert proc.returncode == 2 and "a whole run" in proc.stderr and "tebench compare" in proc.stderr, proc.stderr
