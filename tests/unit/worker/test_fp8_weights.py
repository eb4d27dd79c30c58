"""FP8 weights: the harness keeps delayed-scaling weight transposes in step with the data.

TE's fused FP8 Adam kernel writes a weight's row-wise data only; on the H200 the
cached transpose that the dgrad GEMM reads stayed at its first values (8 of 8
weights in the gpu-smoke GPT). These tests run the refresh logic on the CPU
against a stand-in for TE's Float8Tensor; tests/gpu/test_gpu.py runs it on TE.
"""

from __future__ import annotations

import sys
import types

import pytest
import torch

from tebench.worker.train import refresh_fp8_transposes


class Float8Quantizer:
    """Delayed scaling: FusedAdam updates these weights with its fused FP8 kernel."""


class Float8CurrentScalingQuantizer:
    """Current scaling: FusedAdam requantizes these from the fp32 master."""


class Float8Tensor(torch.nn.Parameter):
    def init(self, quantizer: object) -> "Float8Tensor":
        self._quantizer = quantizer
        self._data = torch.arange(6, dtype=torch.uint8).reshape(3, 2)
        self._transpose = torch.empty(2, 3, dtype=torch.uint8)
        self._transpose_invalid = True
        self.transposes_made = 0
        self._create_transpose()
        return self

    def _create_transpose(self) -> None:
        self._transpose.copy_(self._data.t())  # in place, as TE's fp8_transpose(out=...)
        self._transpose_invalid = False
        self.transposes_made += 1


@pytest.fixture
def fake_te(monkeypatch):
    names = ["transformer_engine", "transformer_engine.pytorch", "transformer_engine.pytorch.tensor",
             "transformer_engine.pytorch.tensor.float8_tensor"]
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    leaf = sys.modules[names[-1]]
    leaf.Float8Tensor, leaf.Float8Quantizer = Float8Tensor, Float8Quantizer


def _weight(quantizer: object) -> Float8Tensor:
    return Float8Tensor(torch.zeros(3, 2), requires_grad=True).init(quantizer)


def _optimizer(update) -> torch.optim.Optimizer:
    """An optimizer whose step runs ``update`` first, as FusedAdam's kernel would."""
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    def pre_hook(*_) -> None:
        update()

    opt.register_step_pre_hook(pre_hook)
    return opt


def test_stale_transposes_are_refreshed_after_every_step(fake_te):
    w = _weight(Float8Quantizer())
    opt = _optimizer(lambda: w._data.add_(1))  # data only: the transpose goes stale
    setup: dict = {}
    refresh_fp8_transposes(opt, [w], setup)
    for _ in range(3):
        opt.step()
        assert torch.equal(w._transpose, w._data.t())
    assert w.transposes_made == 1 + 3
    said = setup["fp8_weight_transpose"]
    assert said.startswith("refreshed") and "every optimizer step" in said, said
    assert "1 of 1" in setup["fp8_weight_transpose"]


def test_fresh_transposes_are_left_alone(fake_te):
    w = _weight(Float8Quantizer())

    def update_both() -> None:  # a TE that keeps the transpose in step itself
        w._data.add_(1)
        w._transpose.add_(1)

    opt = _optimizer(update_both)
    setup: dict = {}
    refresh_fp8_transposes(opt, [w], setup)
    for _ in range(3):
        opt.step()
    assert w.transposes_made == 1
    said = setup["fp8_weight_transpose"]
    assert "kept in step" in said and "FusedAdam" in said and "not refreshed" in said, said


def test_only_delayed_scaling_weights_are_watched(fake_te):
    current = _weight(Float8CurrentScalingQuantizer())
    opt = _optimizer(lambda: current._data.add_(1))
    setup: dict = {}
    refresh_fp8_transposes(opt, [current, torch.nn.Parameter(torch.zeros(2))], setup)
    opt.step()
    assert setup == {} and current.transposes_made == 1
    assert not opt._optimizer_step_post_hooks
