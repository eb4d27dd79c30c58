"""tebench compare: verdicts, noise, status changes, environments, exit codes; with real CPU runs."""

from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from conftest import read_jsonl as lines
from conftest import write_jsonl as write
from tebench.compare import compare

CPU = FIXTURES / "cpu-smoke.jsonl"


def variant(tmp_path: Path, name: str, edit) -> Path:
    records = copy.deepcopy(lines(CPU))
    for r in records:
        if r["type"] == "case":
            edit(r)
    return write(tmp_path / name, records)


def scale_case(case_id: str, factor: float, noise: float = 0.0, seed: int = 0):
    rng = np.random.default_rng(seed)

    def edit(r: dict) -> None:
        if r["case_id"] == case_id and r.get("timing"):
            s = np.asarray(r["timing"]["samples_ms"]) * factor
            r["timing"]["samples_ms"] = list(s * (1 + rng.normal(0, noise, s.size)))
    return edit


def verdicts(result) -> dict[str, str]:
    return {d.case_id: d.verdict for d in result.deltas}


def test_identical_inputs_have_no_regression():
    result = compare(CPU, CPU)
    assert result.exit_code == 0 and not result.regressions
    assert set(verdicts(result).values()) == {"inconclusive"}


def test_real_slowdown_beyond_noise_is_a_regression(tmp_path):
    head = variant(tmp_path, "head.jsonl", scale_case("gpt/tiny/PT-AMP", 1.5))
    result = compare(CPU, head)
    assert verdicts(result)["gpt/tiny/PT-AMP"] == "regressed" and result.exit_code == 1
    (delta,) = [d for d in result.deltas if d.case_id == "gpt/tiny/PT-AMP"]
    assert 1.45 < delta.time_ratio < 1.55 and delta.time_ci[0] > 1.0


def test_speedup_is_an_improvement(tmp_path):
    head = variant(tmp_path, "head.jsonl", scale_case("gpt/tiny/PT-AMP", 0.6))
    result = compare(CPU, head)
    assert verdicts(result)["gpt/tiny/PT-AMP"] == "improved" and result.exit_code == 0


def test_change_within_noise_is_not_a_regression(tmp_path):
    # +8% median shift, but with 40% per-step noise on 30 samples: the interval includes no change.
    base = variant(tmp_path, "base.jsonl", scale_case("gpt/tiny/PT-AMP", 1.0, noise=0.4, seed=1))
    head = variant(tmp_path, "head.jsonl", scale_case("gpt/tiny/PT-AMP", 1.08, noise=0.4, seed=2))
    result = compare(base, head)
    assert verdicts(result)["gpt/tiny/PT-AMP"] == "inconclusive" and result.exit_code == 0


def test_change_below_threshold_is_not_a_regression(tmp_path):
    # Quiet samples: a 3% slowdown is real (outside the noise) but below the 5% default threshold.
    def steady(level: float, seed: int):
        rng = np.random.default_rng(seed)

        def edit(r: dict) -> None:
            if r["case_id"] == "gpt/tiny/PT-AMP":
                r["timing"]["samples_ms"] = list(level + rng.normal(0, 0.01, 30))
        return edit

    base = variant(tmp_path, "base.jsonl", steady(10.0, 1))
    head = variant(tmp_path, "head.jsonl", steady(10.3, 2))
    assert verdicts(compare(base, head))["gpt/tiny/PT-AMP"] == "inconclusive"
    assert verdicts(compare(base, head, {"time": 0.01}))["gpt/tiny/PT-AMP"] == "regressed"


def test_status_change_and_missing_cases(tmp_path):
    def edit(r: dict) -> None:
        if r["case_id"] == "gpt/tiny/PT-FP32":
            r["status"], r["reason"] = "diverged", "loss became nan at step 7"

    records = [r for r in copy.deepcopy(lines(CPU)) if r.get("case_id") != "distill/tiny/PT-AMP"]
    for r in records:
        if r["type"] == "case":
            edit(r)
    head = write(tmp_path / "head.jsonl", records)
    result = compare(CPU, head)
    v = verdicts(result)
    assert v["gpt/tiny/PT-FP32"] == "status-changed" and v["distill/tiny/PT-AMP"] == "missing-in-head"
    assert result.exit_code == 1
    from tebench.compare import to_markdown

    md = to_markdown(result)
    assert "status ok → diverged" in md and "missing-in-head" in md


def test_parity_pass_to_fail_is_a_regression(tmp_path):
    def edit(r: dict) -> None:
        if r["case_id"] == "gpt/tiny/PT-AMP":
            r["loss"]["per_step"] = [v * 1.6 for v in r["loss"]["per_step"]]
            r["loss"]["final"] *= 1.6
            r.pop("parity", None)

    head = variant(tmp_path, "head.jsonl", edit)
    (delta,) = [d for d in compare(CPU, head).deltas if d.case_id == "gpt/tiny/PT-AMP"]
    assert delta.verdict == "regressed" and any("parity pass → fail" in w for w in delta.why)


def test_different_environments_are_flagged_not_counted(tmp_path):
    records = copy.deepcopy(lines(CPU))
    records[0]["env"]["torch"] = "9.9.9"
    for r in records:
        if r.get("case_id") == "gpt/tiny/PT-AMP":
            r["timing"]["samples_ms"] = [s * 2 for s in r["timing"]["samples_ms"]]
    head = write(tmp_path / "head.jsonl", records)
    result = compare(CPU, head)
    assert result.env_differs == ["torch"] and result.regressions and result.exit_code == 0
    from tebench.compare import to_markdown

    assert "different environments" in to_markdown(result)
    assert compare(CPU, head, count_env_changes=True).exit_code == 1


def test_bad_inputs_exit_2(tmp_path, tebench_cli):
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json at all\n")
    for base, head, fragment in [
        (str(tmp_path / "nope"), str(CPU), "no results file"),
        (str(garbage), str(CPU), "no header record"),
    ]:
        proc = tebench_cli("compare", base, head)
        assert proc.returncode == 2 and fragment in proc.stderr, proc.stderr
    other = write(tmp_path / "other.jsonl", [lines(CPU)[0]] + [
        {**r, "case_id": "x/" + r["case_id"]} for r in lines(CPU)[1:]])
    proc = tebench_cli("compare", str(CPU), str(other))
    assert proc.returncode == 2 and "no case in common" in proc.stderr
    proc = tebench_cli("compare", str(CPU), str(CPU), "--threshold", "speed=3")
    assert proc.returncode == 2 and "unknown metric" in proc.stderr


def test_json_format_and_step_summary(tmp_path, tebench_cli):
    summary = tmp_path / "summary.md"
    proc = tebench_cli("compare", str(CPU), str(CPU), "--format", "json", check=True)
    data = json.loads(proc.stdout)
    assert data["exit_code"] == 0 and data["summary"]["regressed"] == 0 and "bootstrap" in data["method"]
    tebench_cli("compare", str(CPU), str(CPU), env={"GITHUB_STEP_SUMMARY": str(summary)}, check=True)
    assert "tebench compare" in summary.read_text()


REAL = """
name = "compare-real"
[settings]
steps = 25
warmup = 3
[axes]
modes = ["PT-FP32", "PT-AMP"]
[sizes.gpt.micro]
vocab = 16
d_model = 64
heads = 2
layers = 2
ffn = 128
seq = 32
batch = 8
"""


@pytest.mark.slow
def test_real_runs_same_code_clean_and_injected_sleep_flagged(tmp_path, tebench_cli):
    matrix = tmp_path / "m.toml"
    matrix.write_text(textwrap.dedent(REAL))
    for name, env in (("a", {}), ("b", {}), ("slow", {"TEBENCH_TEST_STEP_SLEEP_MS": "40"})):
        tebench_cli("run", str(matrix), "--out", str(tmp_path / name), "--rounds", "3", "--no-report",
                    env=env, check=True)
    # Two runs of a tiny model (a few ms a step) on a 2-core CI machine drift apart,
    # and the three rounds of each run share that drift: 10-25% with other work
    # running, and once +36% (95% CI +28..+60%) with nothing else running. A 100%
    # threshold separates such drift from the injected 40 ms sleep, a several-fold
    # slowdown. The same threshold judges both.
    clean = tebench_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--threshold", "time=100%")
    assert clean.returncode == 0, clean.stdout
    slow = tebench_cli("compare", str(tmp_path / "a"), str(tmp_path / "slow"), "--threshold", "time=100%")
    assert slow.returncode == 1, slow.stdout
    assert "2 regression(s)" in slow.stdout
