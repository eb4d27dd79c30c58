"""The frozen-parameter check compares bit patterns: an update smaller than a float sum's ulp is seen."""

from __future__ import annotations

import torch

from tebench.worker.case import _fingerprint, frozen_parameters


def _old_checksum(t: torch.Tensor) -> tuple[float, float]:
    v = t.detach().float()
    return v.sum().item(), v.square().sum().item()


def test_float_sums_collide_on_a_layer_norm_weight_and_the_bit_hash_does_not():
    """A LayerNorm weight of 4096 ones, moved by ±6e-4 (a few steps at lr 1e-4).

    One ulp of the fp32 sum (~4096) is 4.9e-4: the (sum, sum of squares)
    checksum tebench used to compare left some of these updates invisible
    (5 of 2,000 on the development CPU). The bit-pattern hash sees all of them.
    """
    gen = torch.Generator().manual_seed(0)
    ln = torch.nn.LayerNorm(4096)
    before = _fingerprint(ln)
    old_before = _old_checksum(ln.weight)
    collisions = 0
    for _ in range(2000):
        with torch.no_grad():
            ln.weight.fill_(1.0)
            i, j = torch.randint(0, 4096, (2,), generator=gen).tolist()
            if i == j:
                continue
            # Two elements moved by opposite ±6e-4: the sum barely moves, both sums can round back.
            ln.weight[i] += 6e-4
            ln.weight[j] -= 6e-4
        collisions += _old_checksum(ln.weight) == old_before
        result = frozen_parameters(before, ln)
        assert "weight" not in result["unchanged_names"], "the bit hash missed an update"
    assert collisions > 0, "the float checksum should have collided at least once (its blind spot)"


def test_an_untouched_tensor_reads_unchanged():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8))
    before = _fingerprint(model)
    with torch.no_grad():
        model[0].weight[3, 3] = torch.nextafter(model[0].weight[3, 3], torch.tensor(2.0))  # one ulp
    result = frozen_parameters(before, model)
    assert result["method"] == "bits"
    assert result["unchanged_names"] == ["0.bias", "1.weight", "1.bias"]
    assert result["tensors"] == 4 and result["unchanged"] == 3


def test_bf16_parameters_are_hashed_by_their_own_bits():
    p = torch.nn.Parameter(torch.ones(4096, dtype=torch.bfloat16))
    module = torch.nn.Module()
    module.register_parameter("w", p)
    before = _fingerprint(module)
    with torch.no_grad():
        p[7] = 1.0 + 2.0**-7  # the next bf16 after 1.0
    assert frozen_parameters(before, module)["unchanged"] == 0


class _QuantizedLike(torch.Tensor):
    """A weight as TE's Float8Tensor presents one under fp8_weights: ``view`` takes its arguments for a
    shape (a dtype gives back a tensor of the nominal dtype), ``.to(int64)`` converts by value, and
    ``dequantize()`` gives the plain tensor."""

    def view(self, *shape):  # type: ignore[override]
        return self

    def dequantize(self) -> torch.Tensor:
        return self.as_subclass(torch.Tensor).clone()


class _Weights:
    """Just what the fingerprint reads of a model: its named parameters."""

    def __init__(self, **tensors: torch.Tensor):
        self.tensors = tensors

    def named_parameters(self):
        return list(self.tensors.items())


def test_a_quantized_weight_is_hashed_by_its_dequantized_bits():
    """Small weights of an FP8 tensor subclass all read as integer zeros by value: one step's update
    must still be seen (every fp8-weights case of the H200's gpu-smoke read as 8 frozen tensors)."""
    w = (torch.randn(64, 64, generator=torch.Generator().manual_seed(0)) * 0.02).as_subclass(_QuantizedLike)
    model = _Weights(w=w)
    before = _fingerprint(model)  # type: ignore[arg-type]
    model.tensors["w"] = (w.dequantize() - 1e-3).as_subclass(_QuantizedLike)
    assert frozen_parameters(before, model)["unchanged"] == 0  # type: ignore[arg-type]
    assert frozen_parameters(_fingerprint(model), model)["unchanged"] == 1  # type: ignore[arg-type]
