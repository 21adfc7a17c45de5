"""The oracle's emulated rounding (ortcheck.checks.rounding): it must see a cancellation's terms."""
import torch

from ortcheck.checks.rounding import with_rounding

EPS32 = torch.finfo(torch.float32).eps


class Cancel(torch.nn.Module):
    """sum(x) - sum(x) + small: a result of 1e-3 left from terms of 1e4."""

    def forward(self, x):
        return (x * 3).sum() - (x * 3).sum() + x[0] * 1e-3


def test_a_cancelling_sum_moves_by_the_size_of_its_terms_not_of_its_result():
    x = torch.full((64,), 50.0, dtype=torch.float64, requires_grad=True)
    exact = Cancel()(x)
    moved = with_rounding(Cancel(), seed=0)(x)
    terms = (3 * x).abs().sum().item()
    assert abs(exact.item() - 0.05) < 1e-12
    assert EPS32 * terms / 1000 < abs((moved - exact).item()) < EPS32 * terms


def test_gradients_through_the_module_are_rounded_too_and_values_stay_close():
    x = torch.randn(8, 8, dtype=torch.float64, requires_grad=True)
    layer = torch.nn.Linear(8, 8).double()
    (layer(x) * 2).sum().backward()
    exact = x.grad.clone()
    x.grad = None
    (with_rounding(layer, seed=1)(x) * 2).sum().backward()
    relative = ((x.grad - exact).abs() / exact.abs()).max().item()
    assert 0 < relative < 64 * EPS32


def test_aliases_and_in_place_buffers_keep_their_identity():
    norm = with_rounding(torch.nn.BatchNorm1d(3).double(), seed=2)
    before = norm.running_mean
    norm(torch.randn(4, 3, dtype=torch.float64) + 5)
    assert norm.running_mean is before and (before > 0.4).all()
    view = with_rounding(torch.nn.Flatten(0), seed=3)
    x = torch.randn(2, 3, dtype=torch.float64)
    assert torch.equal(view(x), x.reshape(-1))


def test_switched_off_it_is_the_float64_run_itself(monkeypatch):
    monkeypatch.setenv("ORTCHECK_ORACLE_ROUNDING", "0")
    x = torch.full((64,), 50.0, dtype=torch.float64)
    assert with_rounding(Cancel(), seed=0)(x).item() == Cancel()(x).item()
