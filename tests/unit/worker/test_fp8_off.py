"""fp8_off: the structural checks' forward passes without FP8, restored afterwards."""

from __future__ import annotations

import torch
from torch import nn

from tebench.worker.fp8_off import fp8_off


def _float8_linear_class() -> type:
    """A stand-in for torchao's Float8Linear: named and placed like it, with a forward that must not run."""

    class Float8Linear(nn.Linear):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise AssertionError("the FP8 forward ran inside fp8_off")

    Float8Linear.__module__ = "torchao.float8.float8_linear"
    return Float8Linear


def test_torchao_layers_run_their_high_precision_forward_inside_and_fp8_after():
    layer = _float8_linear_class()(4, 3)
    model = nn.Sequential(layer, nn.ReLU())
    x = torch.randn(2, 4)
    with fp8_off(model) as state:
        assert state == "off"
        torch.testing.assert_close(model(x), torch.relu(nn.functional.linear(x, layer.weight, layer.bias)))
    try:
        model(x)
    except AssertionError as e:
        assert "FP8 forward ran" in str(e)
    else:
        raise AssertionError("the FP8 forward was not restored")
    assert "forward" not in layer.__dict__


def test_a_model_without_fp8_layers_reads_none():
    with fp8_off(nn.Sequential(nn.Linear(2, 2))) as state:
        assert state == "none"
