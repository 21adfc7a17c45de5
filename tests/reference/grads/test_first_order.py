"""create_graph=True is refused by name in both delivery modes, even with a constant cotangent
(where torch's once_differentiable would silently return a first derivative without a graph)."""
import pytest
import torch

from reference import Options
from reference.grads.first_order import REFUSAL
from reference.module import ReferenceModule


@pytest.mark.parametrize("mem_efficient_grad", [False, True])
@pytest.mark.parametrize("first_loss", [lambda out: out.sum(), lambda out: out.square().sum()])
def test_create_graph_is_refused_before_any_first_derivative(mem_efficient_grad, first_loss):
    torch.manual_seed(0)
    wrapped = ReferenceModule(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)),
                              Options(fallback="disable", mem_efficient_grad=mem_efficient_grad))
    x = torch.randn(5, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="create_graph=True"):
        torch.autograd.grad(first_loss(wrapped(x)), x, create_graph=True)
    assert "double backward" in REFUSAL
    (first,) = torch.autograd.grad(first_loss(wrapped(x)), x)  # without create_graph: a plain first derivative
    assert first.shape == x.shape and not first.requires_grad
