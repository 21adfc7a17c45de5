"""Eager's record of the values a forward turns into control flow, for the transition contract."""
import torch

from ortcheck.stateful.control_values import control_values


class Routed(torch.nn.Module):
    """Loops over the rows its input selects, counts them, and keeps a running count in a buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        out = torch.nn.functional.dropout(x, 0.5)
        for row in (x > 0).nonzero():
            out = out + x[row[0]]
        return out * bool(x.sum() > 0)


def test_records_loop_lengths_and_branches_and_leaves_the_module_and_rng_as_they_were():
    module = Routed()
    state = torch.get_rng_state()
    two = control_values(module, (torch.tensor([1.0, -1.0, 2.0]),), {})
    assert torch.equal(torch.get_rng_state(), state) and module.calls.item() == 0
    assert two == (("unbind", 2), ("__bool__", True))
    assert control_values(module, (torch.tensor([-1.0, -1.0, 2.0]),), {}) == (("unbind", 1), ("__bool__", False))
