"""Reference twins: the reference's own weights moved by their last bit, the same on every device."""

from __future__ import annotations

import torch

from tebench.worker import replicas


def test_signs_are_balanced_uncorrelated_and_fixed_by_the_salt():
    a = replicas._signs(200_000, 7, torch.device("cpu")).float()
    b = replicas._signs(200_000, 8, torch.device("cpu")).float()
    assert set(a.unique().tolist()) == {-1.0, 1.0}
    assert abs(a.mean()) < 0.01 and abs((a[1:] * a[:-1]).mean()) < 0.01 and abs((a * b).mean()) < 0.01
    assert torch.equal(a, replicas._signs(200_000, 7, torch.device("cpu")).float())


def test_perturb_moves_every_fp32_weight_by_its_last_bit():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.LayerNorm(64))
    before = [p.detach().clone() for p in model.parameters()]
    replicas.perturb(model, seed=3, scale=2.0 ** -23)
    for old, new in zip(before, model.parameters()):
        moved = (new.detach().view(torch.int32) - old.view(torch.int32)).abs()
        nonzero = old != 0
        assert bool((moved[nonzero] >= 1).all()) and bool((moved <= 2).all())  # one or two units in the last place
    again = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.LayerNorm(64))
    for src, dst in zip(before, again.parameters()):
        dst.data.copy_(src)
    replicas.perturb(again, seed=3, scale=2.0 ** -23)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))
