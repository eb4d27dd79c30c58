"""Mutation self-tests: deliberately wrong models must be judged ``fail``, correct ones ``pass``.

Each mutation (tebench.plan.faults.MUTATIONS) trains without any error; only the
verdicts can tell. Every mutation a PyTorch mode can express runs here on the
CPU, in-process (the same ``run_case`` the worker calls); the TE ones run in
tests/gpu/test_gpu.py on a GPU.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
import torch

from tebench.plan import faults
from tebench.analysis import parity
from tebench.plan import schedule
from tebench.run.record_builder import build_record
from tebench.schema.records import CaseResult
from tebench.schema.environment import Environment
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.worker.case import run_case
from tebench.worker.models import WORKLOADS
from tebench.worker.models.gpt import GPTSize

# Long enough for the tiny reference to learn the task (greedy accuracy 1.0 on
# the 2-core CPU machine at 160 steps): a verdict needs a reference that learned.
STEPS = 160
SIZE = GPTSize(vocab=32, d_model=64, heads=4, layers=2, ffn=128, seq=32, batch=16)
CPU_MUTATIONS = ["no-causal", "swap-layout", "freeze-layer", "lr-x10", "leak-next", "init-default"]


def _trained_case(mode: str) -> Case:
    return Case(workload="gpt", size="tiny", mode=mode, dims=dataclasses.asdict(SIZE),
                settings=Settings(steps=STEPS, warmup=0, lr=3e-3, profile_steps=0))


def _trained_record(case: Case, monkeypatch, mutation: str | None = None, round_: int = 0) -> CaseResult:
    if mutation:
        monkeypatch.setenv(faults.FAULT_ENV, f"{case.id}={mutation}")
    else:
        monkeypatch.delenv(faults.FAULT_ENV, raising=False)
    raw = run_case(case, torch.device("cpu"), lambda *a: None)
    # The record as `tebench run` writes it: what the verdict needs must survive build_record.
    return build_record(schedule.Planned(case, round_, None), raw, Environment(device_type="cpu"),
                        "mutations", time.time(), 0.0, None)


def _judged_together(runs: dict[str, tuple[Case, str | None, int]]) -> dict[str, dict]:
    """``name -> (case, mutation, round)``: each run in this process, then all judged together."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # bit-identical results whatever else the machine is doing
    mp = pytest.MonkeyPatch()
    try:
        records = {name: _trained_record(case, mp, mutation, round_) for name, (case, mutation, round_) in runs.items()}
    finally:
        mp.undo()
        torch.set_num_threads(threads)
    parity.attach(list(records.values()))
    return {name: record.to_dict() for name, record in records.items()}


@pytest.fixture(scope="module")
def judged():
    """Reference, A/A round, unmutated PT-AMP and every CPU mutation of PT-AMP, judged together."""
    return _judged_together({"reference": (_trained_case("PT-FP32"), None, 0),
                             "a/a round": (_trained_case("PT-FP32"), None, 1),
                             "PT-AMP": (_trained_case("PT-AMP"), None, 0),
                             **{m: (_trained_case("PT-AMP"), m, 0) for m in CPU_MUTATIONS}})


def test_the_reference_learned(judged):
    assert judged["reference"]["parity"]["verdict"] == "reference"
    assert "reference learned" in judged["reference"]["parity"]["reason"]


@pytest.mark.parametrize("name", ["a/a round", "PT-AMP"])
def test_unmutated_runs_pass(judged, name):
    assert judged[name]["parity"]["verdict"] == "pass", judged[name]["parity"]["reason"]


@pytest.mark.parametrize("mutation", CPU_MUTATIONS)
def test_every_cpu_mutation_fails(judged, mutation):
    record = judged[mutation]
    assert record["setup"]["test_mutation"].startswith(mutation)
    assert record["parity"]["verdict"] == "fail", record["parity"]["reason"]


def test_freeze_layer_is_caught_by_the_update_check(judged):
    assert judged["freeze-layer"]["updates"]["unchanged"] > 0
    assert "never changed" in judged["freeze-layer"]["parity"]["reason"]


def test_unknown_fault_kind_is_an_error():
    with pytest.raises(ValueError, match="unknown kind"):
        faults.fault_for("gpt/x/PT-AMP", {faults.FAULT_ENV: "gpt/*=no-such-thing"})
    assert faults.mutation_for("gpt/x/PT-AMP", {faults.FAULT_ENV: "gpt/*=crash"}) is None
    assert faults.mutation_for("gpt/x/PT-AMP", {faults.FAULT_ENV: "distill/*=lr-x10;gpt/*=no-causal"}) == "no-causal"


def test_te_only_mutation_refuses_a_pytorch_case(monkeypatch):
    monkeypatch.setenv(faults.FAULT_ENV, "*=fp8-scale-one")
    case = _trained_case("PT-AMP").replace(settings=Settings(steps=1, warmup=0, profile_steps=0))
    with pytest.raises(RuntimeError, match="TE-FP8 delayed-scaling"):
        run_case(case, torch.device("cpu"), lambda *a: None)


def test_distill_heldout_targets_come_from_the_training_teacher():
    """The held-out batch once re-drew the teacher from another seed: it measured a different function.

    The student is per-token, so the same token must have the same target in
    training and held-out batches.
    """
    wl = WORKLOADS["distill"]
    size = wl.size_type(vocab=16, hidden=16, ffn=32, blocks=2, seq=8, batch=4)
    train = wl.batches(size, 1, 1234, torch.device("cpu"))[0]
    held = wl.batches(size, 1, 1234, torch.device("cpu"), data_seed=1234 + 999_983)[0]
    assert not torch.equal(train.inputs, held.inputs)
    seen = {}
    for batch in (train, held):
        for token, target in zip(batch.inputs.flatten().tolist(), batch.targets.flatten(0, 1)):
            if token in seen:
                assert torch.equal(seen[token], target)
            seen[token] = target
    assert len(seen) < train.inputs.numel() * 2  # some tokens occur in both


def test_distill_heldout_mse_tracks_the_training_loss():
    """With the right teacher, held-out MSE of a trained student is near its training loss (was ~30x)."""
    wl = WORKLOADS["distill"]
    size = wl.size_type(vocab=32, hidden=32, ffn=64, blocks=2, seq=16, batch=8)
    case = Case(workload="distill", size="t", mode="PT-FP32", dims=dataclasses.asdict(size),
                settings=Settings(steps=150, warmup=0, lr=3e-3, profile_steps=0))
    raw = run_case(case, torch.device("cpu"), lambda *a: None)
    final = parity.final_loss(raw.loss.per_step)
    assert raw.validation.heldout_mse < 3 * final


# --- the same mutations on the zipf-markov task, judged by the equivalence rule -----------------------

# 240 steps: the reference has learned the copy (the part of the task that needs attention), so a model that
# cannot see its own previous tokens (swap-layout) ends 0.10 nats above it against a 0.05 margin (2-core
# CPU, torch 2.13); at 160 steps the two were 0.045 and 0.042.
ZIPF_STEPS = 240
ZIPF_SIZE = GPTSize(vocab=32, d_model=64, heads=4, layers=2, ffn=128, seq=32, batch=16, task="zipf-markov")


def _zipf_case(mode: str, seeds: int = 0, twins: int = 0) -> Case:
    return Case(workload="gpt", size="tiny-zm", mode=mode, dims=dataclasses.asdict(ZIPF_SIZE),
                settings=Settings(steps=ZIPF_STEPS, warmup=0, lr=3e-3, profile_steps=0, reference_seeds=seeds,
                                  reference_twins=twins))


@pytest.fixture(scope="module")
def zipf_judged():
    """PT-FP32 at three seeds and with two twins, PT-AMP, and every CPU mutation of PT-AMP on the zipf-markov
    task, the structural ones and those of the same structure that train a few per cent differently."""
    return _judged_together({"reference": (_zipf_case("PT-FP32", seeds=2, twins=2), None, 0),
                             "PT-AMP": (_zipf_case("PT-AMP"), None, 0),
                             **{m: (_zipf_case("PT-AMP"), m, 0) for m in CPU_MUTATIONS + list(faults.SUBTLE)}})


def test_zipf_reference_trains_its_seeds(zipf_judged):
    ref = zipf_judged["reference"]
    assert ref["parity"]["verdict"] == "reference"
    assert len(ref["loss"]["replicas"]) == 2 and len(ref["loss"]["replica_seeds"]) == 2
    assert len(ref["validation"]["replicas"]) == 2
    assert ref["phases"]["replicas_s"] > 0
    assert ref["validation"]["heldout_loss"] > ref["validation"]["floor"]


def test_zipf_reference_trains_its_twins(zipf_judged):
    """Twins share the reference's seed and batches: on the CPU (deterministic kernels) they land within a
    hair of it, so the paired noise floor leaves the 1% margin as asked."""
    ref = zipf_judged["reference"]
    twins = ref["loss"]["twins"]
    assert len(twins) == 2 and len(ref["validation"]["twins"]) == 2 and ref["phases"]["twins_s"] > 0
    assert twins[0] != ref["loss"]["per_step"] and twins[0][0] == pytest.approx(ref["loss"]["per_step"][0], abs=1e-4)
    assert all(abs(t[-1] - ref["loss"]["per_step"][-1]) < 0.01 for t in twins)


def test_zipf_unmutated_pt_amp_passes_by_equivalence(zipf_judged):
    verdict = zipf_judged["PT-AMP"]["parity"]
    assert verdict["verdict"] == "pass" and verdict["rule"] == "equivalence", verdict["reason"]
    # The pass certifies a number: 1% of the reference's final loss, from paired twins.
    assert verdict["margin_rel"] == pytest.approx(0.01) and verdict["noise_paired"] is True
    assert verdict["noise_floor_nats"] < 0.001
    assert zipf_judged["PT-AMP"]["validation"]["causal_kl"] < parity.STRUCTURE_KL


@pytest.mark.parametrize("mutation", CPU_MUTATIONS + list(faults.SUBTLE))
def test_zipf_every_cpu_mutation_fails(zipf_judged, mutation):
    assert zipf_judged[mutation]["parity"]["verdict"] == "fail", zipf_judged[mutation]["parity"]["reason"]


@pytest.mark.parametrize("mutation", faults.SUBTLE)
def test_zipf_same_structure_mutations_train_a_few_per_cent_differently(zipf_judged, mutation):
    """The class keeps the model's shape and parameters: nothing froze, and the loss moved by at most ~10%.
    The margin, not a gross failure, is what catches them."""
    record = zipf_judged[mutation]
    assert record["updates"]["unchanged"] == 0
    assert 0.005 < abs(record["parity"]["rel_diff"]) < 0.12, record["parity"]["reason"]


def test_zipf_no_causal_is_a_leak_below_the_floor_and_sees_the_future(zipf_judged):
    reason = zipf_judged["no-causal"]["parity"]["reason"]
    assert "below the task's floor" in reason and "sees the future" in reason


def test_zipf_swap_layout_ignores_the_context_the_reference_uses(zipf_judged):
    """Attention over the batch never mixes a sequence's positions: its context check reads exactly 0."""
    ref = zipf_judged["reference"]["validation"]["context_kl"]
    swapped = zipf_judged["swap-layout"]
    assert ref > parity.CONTEXT_MIN_KL
    assert swapped["validation"]["context_kl"] < 1e-6
    assert "ignore the tokens before" in swapped["parity"]["reason"], swapped["parity"]["reason"]


def test_zipf_unmutated_case_uses_the_context_as_the_reference_does(zipf_judged):
    ref = zipf_judged["reference"]["validation"]["context_kl"]
    mine = zipf_judged["PT-AMP"]["validation"]["context_kl"]
    assert parity.CONTEXT_SHARE * ref < mine < ref / parity.CONTEXT_SHARE


@pytest.mark.parametrize("spec", ["bogus", "gpt/*=bogus", "gpt/*/PT-AMP=leak-next;=crash"])
def test_a_fault_spec_the_worker_would_not_understand_is_refused_before_the_run(spec, tmp_path, monkeypatch, capsys):
    """A typo in TEBENCH_TEST_FAULT failed every case with a worker traceback, and the run exited 0."""
    from tebench import cli

    monkeypatch.setenv(faults.FAULT_ENV, spec)
    assert cli.main(["run", "--preset", "smoke", "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert faults.FAULT_ENV in err and "Traceback" not in err, err
    assert not (tmp_path / "r").exists()
    assert cli.main(["ab", "--preset", "smoke", "--out", str(tmp_path / "ab"), "--quiet"]) == 2
    assert faults.FAULT_ENV in capsys.readouterr().err and not (tmp_path / "ab").exists()
