"""tebench ab: ABBA order, side environments, bad input, and one short end-to-end run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tebench.analysis.parity import PARITY_RULES
from conftest import CPU_ENV, MICRO_GPT, read_jsonl
from tebench.run import ab


def test_abba_order():
    assert ab.order(4) == [(0, ("base", "head")), (1, ("head", "base")), (2, ("base", "head")),
                           (3, ("head", "base"))]
    sched = ab.schedule(["x", "y"], 2)
    assert sched == [(0, "x", "base"), (0, "x", "head"), (0, "y", "base"), (0, "y", "head"),
                     (1, "x", "head"), (1, "x", "base"), (1, "y", "head"), (1, "y", "base")]
    # Over an even number of rounds each side goes first equally often, for every case.
    firsts = [sides[0] for _, sides in ab.order(6)]
    assert firsts.count("base") == firsts.count("head") == 3


def test_env_parsing():
    assert ab.parse_env(["NVTE_FUSED_ATTN=0", "A_B=x=y", "EMPTY="], "--head-env") == {
        "NVTE_FUSED_ATTN": "0", "A_B": "x=y", "EMPTY": ""}
    for bad in (["NOEQUALS"], ["1BAD=1"], ["=1"], ["A=1", "A=2"], ["BAD NAME=1"]):
        with pytest.raises(ab.ABError, match="--head-env"):
            ab.parse_env(bad, "--head-env")


def test_bad_input_exits_2(tmp_path, tebench_cli):
    for args, fragment in [
        (["--head-env", "NOPE"], "expected NAME=VALUE"),
        (["--base-python", str(tmp_path / "no-python")], "--base-python"),
        (["--rounds", "0"], "at least 1"),
        (["--threshold", "time=3"], "ambiguous"),
        (["--device", "x"], "--device"),
    ]:
        proc = tebench_cli("ab", "--preset", "smoke", "--out", str(tmp_path / "o"), *args)
        assert proc.returncode == 2 and fragment in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


TINY = """
name = "ab-tiny"
[settings]
steps = 5
warmup = 1
profile_steps = 0
[axes]
modes = ["PT-FP32", "PT-AMP"]
""" + MICRO_GPT


@pytest.mark.slow
def test_ab_end_to_end(tmp_path, tebench_cli):
    # One short interleaved run, the head's steps stretched 10x by the test hook. Load can move
    # either side by any amount, so only what it cannot flip is asserted: structure, pairing,
    # order, the environment difference, and that a 10x stretch is never judged an improvement.
    matrix = tmp_path / "m.toml"
    matrix.write_text(textwrap.dedent(TINY))
    out = tmp_path / "ab"
    proc = tebench_cli("ab", str(matrix), "--out", str(out), "--rounds", "3", "--quiet", "--format", "json",
                       "--base-env", "TEBENCH_TEST_SLOWDOWN=1.0", "--head-env", "TEBENCH_TEST_SLOWDOWN=10")
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    assert data == json.loads((out / "compare.json").read_text())
    assert (out / "compare.md").read_text().startswith("### ")
    assert data["paired"] is True and data["exit_code"] == proc.returncode
    # Each case runs once per side and round: every progress line says which.
    for side in ("base", "head"):
        for rnd in (1, 3):
            assert f"] {side}, round {rnd}/3: " in proc.stderr, proc.stderr
    assert any("TEBENCH_TEST_SLOWDOWN: 1.0 → 10" in x for x in data["environment_differences"])
    assert {c["case_id"] for c in data["cases"]} == {"gpt/micro/PT-FP32", "gpt/micro/PT-AMP"}
    for case in data["cases"]:
        assert case["rounds"] == [3, 3] and case["verdict"] != "improved"
    base, head = (read_jsonl(out / side / "results.jsonl") for side in ("base", "head"))
    assert base[0]["ab"]["id"] == head[0]["ab"]["id"] and base[0]["ab"]["side"] == "base"
    assert all(r["setup"]["test_slowdown"] == 10.0 for r in head[1:])
    # Each side's verdicts were judged over its whole run when it ended, and stored with their rules.
    assert {r["parity"]["rules"] for r in base[1:] + head[1:] if r.get("parity")} == {PARITY_RULES}
    # ABBA: in even rounds base ran first, in odd rounds head did.
    started = {(side, r["case_id"], r["round"]): r["started"] for side, recs in (("base", base), ("head", head))
               for r in recs[1:]}
    for (side, case_id, rnd), t in started.items():
        if side == "base":
            other = started[("head", case_id, rnd)]
            assert (t <= other) if rnd % 2 == 0 else (t >= other)


def test_calibration_from_a_pool_of_rounds(tmp_path):
    # benchmarks/gate_calibration.py pool: resample stored rounds of one code into A/A and slowdown
    # trials. Synthetic rounds (2% round offsets, AR(1)-free steps) stand in for a long run.
    import importlib.util

    import numpy as np

    from conftest import FIXTURES, ROOT, write_jsonl

    # Loaded from its file: putting benchmarks/ on sys.path would shadow tests/conftest.py for
    # every later import of it (spawned test workers included).
    spec = importlib.util.spec_from_file_location("gate_calibration", ROOT / "benchmarks" / "gate_calibration.py")
    gate_calibration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gate_calibration)

    rng = np.random.default_rng(0)
    header, *cases = [r for r in read_jsonl(FIXTURES / "cpu-smoke.jsonl")]
    out = [header]
    for k in range(16):  # a plain run of 16 rounds
        for r in cases:
            if r.get("timing"):
                level = float(np.median(r["timing"]["samples_ms"])) * np.exp(rng.normal(0, 0.02))
                out.append({**r, "round": k, "started": f"2026-11-30T10:{k:02d}:00+0000",
                            "timing": {**r["timing"], "samples_ms": list(level * np.exp(rng.normal(0, 0.01, 20)))}})
    write_jsonl(tmp_path / "pool.jsonl", out)
    gate_calibration.main(["pool", str(tmp_path / "pool.jsonl"), "--rounds", "5", "--trials", "40",
                           "--slowdown", "1.3", "--out", str(tmp_path / "cal")])
    data = json.loads((tmp_path / "cal" / "pool-r5-x1.3.json").read_text())
    s = data["summary"]
    assert s["aa_case_flagged"]["n"] == 40 * 5 and s["aa_case_flagged"]["rate"] <= 0.05
    assert s["slow_case_regressed"]["rate"] >= 0.95 and s["slow_case_improved"]["k"] == 0
    assert all(n == 8 for n in data["pool_pairs"].values())  # 16 rounds of a plain run: 8 neighbour pairs


def test_ab_sides_run_in_prestarted_workers(tmp_path, stub_cli, stub_worker, monkeypatch):
    # Each side pre-starts its own next case while the other side's case runs; the stub worker
    # answers at once, so this checks the hand-off and pairing, not timing.
    monkeypatch.setattr(ab, "probe", lambda *a, **k: CPU_ENV.model_copy())
    matrix = tmp_path / "m.toml"
    matrix.write_text(textwrap.dedent(TINY))
    out = tmp_path / "ab"
    proc = stub_cli("ab", str(matrix), "--out", str(out), "--rounds", "3", "--quiet", "--launch", "prestarted",
                    "--base-python", stub_worker, "--head-python", stub_worker)
    assert proc.returncode in (0, 1), proc.stderr
    for side in ("base", "head"):
        recs = read_jsonl(out / side / "results.jsonl")
        assert recs[0]["launch"] == "prestarted"
        cases = [r for r in recs[1:] if r["type"] == "case"]
        assert len(cases) == 6
        methods = [r["launch"]["method"] for r in cases]
        assert methods[0] == "cold" and methods[1:] == ["prestarted"] * 5, methods
    assert not (out / "base" / ".work").exists() and not (out / "head" / ".work").exists()


def test_a_sides_probe_runs_with_its_variables_and_leaves_this_process_alone(tmp_path, monkeypatch):
    # Each side is probed with its own PYTHONPATH and NVTE_*/TORCH_* variables; they reach the child
    # and the recorded env_vars, and os.environ here is the same before and after.
    from tebench.plan import environment

    seen: list[dict[str, str]] = []
    run = subprocess.run

    def child(cmd, **kwargs):
        if "tebench.worker.probe" not in cmd:
            return run(cmd, **kwargs)  # git, asked for the commit
        seen.append(kwargs.get("env") or {})
        answer = json.dumps(CPU_ENV.model_copy().to_dict())
        return subprocess.CompletedProcess(cmd, 0, stdout=answer + "\n", stderr="")

    monkeypatch.setenv(environment.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("NVTE_AB_SIDE", raising=False)
    monkeypatch.setattr(environment.subprocess, "run", child)
    before = dict(os.environ)
    side = {"NVTE_AB_SIDE": "1", "PYTHONPATH": "/side"}
    environment.probe(python=sys.executable, extra_env=side)
    assert seen[0]["NVTE_AB_SIDE"] == "1" and seen[0]["PYTHONPATH"] == "/side"
    # The cached answer (as --device's check reads it) is found under the side's key and records its variables.
    cached = environment.probe(python=sys.executable, cached=True, extra_env=side)
    assert len(seen) == 1 and cached.env_vars.get("NVTE_AB_SIDE") == "1"
    assert dict(os.environ) == before
    # The side's variables are part of the machine key: another side's answer is not reused for it.
    assert environment.machine_key(sys.executable, {**before, "NVTE_AB_SIDE": "1"}) != \
        environment.machine_key(sys.executable, before)
