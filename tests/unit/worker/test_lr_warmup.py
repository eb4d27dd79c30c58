"""Learning-rate warm-up: a per-size setting, applied by the trainer, part of what parity compares."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tebench.plan import matrix
from tebench.plan.matrix import MatrixError, iter_cases
from tebench.schema.records import Case
from tebench.schema.settings import Settings
from tebench.worker.train import build_trainer
from tebench.worker.models import WORKLOADS
from tebench.worker.models.gpt import GPTSize
from tebench.workloads import size_of

from conftest import BASE, write


def test_lr_warmup_is_a_per_size_setting(tmp_path):
    text = BASE + "\n[sizes.gpt.wide]\nvocab = 32\nd_model = 64\nheads = 2\nlayers = 1\nffn = 128\nseq = 16\nbatch = 2\nlr_warmup = 4\n"
    cases = list(iter_cases(matrix.load(write(tmp_path, text))))
    assert {c.settings.lr_warmup for c in cases if c.size == "wide"} == {4}
    assert {c.settings.lr_warmup for c in cases if c.size != "wide"} == {0}
    bad = BASE.replace("[settings]", "[settings]\nlr_warmup = -2")
    with pytest.raises(MatrixError) as err:
        list(iter_cases(matrix.load(write(tmp_path, bad, "bad.toml"))))
    assert err.value.key == "settings.lr_warmup"


def _lr_warmup_case(lr_warmup: int) -> Case:
    size = GPTSize(vocab=32, d_model=32, heads=2, layers=1, ffn=64, seq=8, batch=2)
    return Case(workload="gpt", size="t", mode="PT-FP32", dims=dataclasses.asdict(size),
                settings=Settings(steps=5, warmup=1, lr=1e-3, lr_warmup=lr_warmup))


def test_trainer_ramps_the_learning_rate_then_holds_it():
    case, device = _lr_warmup_case(4), torch.device("cpu")
    batches = WORKLOADS["gpt"].batches(size_of(case), 6, case.settings.seed, device)
    trainer = build_trainer(case, device, batches)
    seen = []
    for batch in batches:
        seen.append(trainer.optimizer.param_groups[0]["lr"])
        trainer.step(batch)
    assert seen == pytest.approx([2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3, 1e-3])
    assert trainer.setup["lr_schedule"].startswith("linear warm-up over 4 steps")


def test_no_warmup_keeps_a_constant_rate():
    case, device = _lr_warmup_case(0), torch.device("cpu")
    batches = WORKLOADS["gpt"].batches(size_of(case), 2, case.settings.seed, device)
    trainer = build_trainer(case, device, batches)
    for batch in batches:
        trainer.step(batch)
    assert trainer.optimizer.param_groups[0]["lr"] == 1e-3 and "lr_schedule" not in trainer.setup

