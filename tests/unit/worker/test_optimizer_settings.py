"""AdamW's beta2 and gradient clipping: per-size settings, applied by the trainer; these and the lr warm-up are
part of what parity compares."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tebench.analysis import parity
from tebench.plan import matrix
from tebench.plan.matrix import MatrixError, iter_cases
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.schema.records import CaseResult
from tebench.worker.models import WORKLOADS
from tebench.worker.models.gpt import GPTSize
from tebench.worker.train import build_trainer
from tebench.workloads import size_of

from conftest import BASE, write


def _case(**settings) -> Case:
    size = GPTSize(vocab=32, d_model=32, heads=2, layers=1, ffn=64, seq=8, batch=2)
    return Case(workload="gpt", size="t", mode="PT-FP32", dims=dataclasses.asdict(size),
                settings=Settings(steps=3, warmup=0, lr=1e-3, **settings))


def _grad_norm(trainer) -> float:
    grads = [p.grad for p in trainer.eager.parameters() if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))


def test_settings_are_per_size_and_checked(tmp_path):
    text = BASE + ("\n[sizes.gpt.calm]\nvocab = 32\nd_model = 64\nheads = 2\nlayers = 1\nffn = 128\nseq = 16\n"
                   "batch = 2\nadam_beta2 = 0.95\ngrad_clip = 1.0\n")
    cases = list(iter_cases(matrix.load(write(tmp_path, text))))
    assert {(c.settings.adam_beta2, c.settings.grad_clip) for c in cases if c.size == "calm"} == {(0.95, 1.0)}
    assert {(c.settings.adam_beta2, c.settings.grad_clip) for c in cases if c.size != "calm"} == {(0.999, 0.0)}
    for bad, key in (("adam_beta2 = 1.0", "settings.adam_beta2"), ("grad_clip = -1", "settings.grad_clip")):
        with pytest.raises(MatrixError) as err:
            list(iter_cases(matrix.load(write(tmp_path, BASE.replace("[settings]", f"[settings]\n{bad}"), "bad.toml"))))
        assert err.value.key == key


def test_beta2_reaches_the_optimizer_and_is_named_only_when_not_the_default():
    device = torch.device("cpu")
    calm = build_trainer(_case(adam_beta2=0.95), device, [])
    assert calm.optimizer.param_groups[0]["betas"] == (0.9, 0.95)
    assert calm.setup["optimizer"] == "torch.optim.AdamW(foreach=True, betas=(0.9, 0.95))"
    plain = build_trainer(_case(), device, [])
    assert plain.optimizer.param_groups[0]["betas"] == (0.9, 0.999)
    assert plain.setup["optimizer"] == "torch.optim.AdamW(foreach=True)"  # as every earlier record says


def test_the_step_clips_the_gradients_global_norm():
    device = torch.device("cpu")
    case = _case(grad_clip=0.05)
    batch = WORKLOADS["gpt"].batches(size_of(case), 1, case.settings.seed, device)[0]
    clipped, free = build_trainer(case, device, [batch]), build_trainer(_case(), device, [batch])
    clipped.step(batch)
    free.step(batch)
    # The step leaves the gradients it applied in place (zero_grad comes first in the next step).
    assert _grad_norm(free) > 0.1
    assert _grad_norm(clipped) == pytest.approx(0.05, rel=1e-4)
    assert clipped.setup["grad_clip"].startswith("torch.nn.utils.clip_grad_norm_(max_norm=0.05)")
    assert "grad_clip" not in free.setup


@pytest.mark.parametrize("key, value, default",
                         [("lr_warmup", 16, 0), ("adam_beta2", 0.95, 0.999), ("grad_clip", 1.0, 0.0)])
def test_a_reference_with_other_optimizer_settings_is_not_the_same_training(key, value, default):
    def record(mode: str, setting: float | None) -> CaseResult:
        settings = {"seed": 1, "steps": 30, "warmup": 10, "lr": 1e-3, "parity_rtol": 0.1, "parity_atol": 0.05}
        if setting is not None:  # None: a record from before the setting existed
            settings[key] = setting
        return CaseResult.from_dict({"case_id": f"gpt/s/{mode}", "status": "ok", "loss": {"per_step": [4.0] * 40},
                                     "case": {"workload": "gpt", "size": "s", "mode": mode, "dims": {"d": 1},
                                              "graphs": False, "parallel": "single", "settings": settings}})

    assert parity.reference_for([record("PT-FP32", value)], record("TE-FP8", default))[0] is None
    assert parity.reference_for([record("PT-FP32", None)], record("TE-FP8", default))[0] == "PT-FP32"
    assert parity.reference_for([record("PT-FP32", value)], record("TE-FP8", value))[0] == "PT-FP32"
