"""ReferenceModule follows the transition machine: per-mode graphs, no_grad reuse, attribute sets re-export."""
import copy

import torch

from reference.module import ReferenceModule
from reference.transitions.state_machine import MODULE_CHANGED, REUSED


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(3, 2)
        self.gain = 1.0

    def forward(self, x):
        return self.linear(x) * self.gain * (1.0 if self.training else 3.0)


def counters(wrapped):
    observed = wrapped.counters()
    return observed.exports, observed.gradient_builds, observed.sessions, observed.last_reason


def test_an_attribute_set_on_the_wrapper_reaches_the_module_and_reexports():
    eager = Scaled()
    wrapped = ReferenceModule(copy.deepcopy(eager))
    x = torch.randn(4, 3)
    wrapped(x)
    wrapped.gain = 2.5
    eager.gain = 2.5
    assert wrapped.module.gain == 2.5 and "gain" not in wrapped.__dict__
    torch.testing.assert_close(wrapped(x), eager(x))
    assert counters(wrapped) == (2, 2, 2, MODULE_CHANGED)


def test_returning_to_a_mode_reuses_its_graph():
    wrapped = ReferenceModule(Scaled())
    x = torch.randn(4, 3)
    for training in (True, False, True, False):
        wrapped.train(training)
        wrapped(x)
    assert counters(wrapped) == (2, 2, 2, REUSED)


def test_a_no_grad_forward_rebuilds_nothing():
    wrapped = ReferenceModule(Scaled())
    x = torch.randn(4, 3, requires_grad=True)
    wrapped(x)
    with torch.no_grad():
        out = wrapped(x)
    assert not out.requires_grad
    wrapped(x).sum().backward()
    assert counters(wrapped) == (1, 1, 1, REUSED) and x.grad is not None
