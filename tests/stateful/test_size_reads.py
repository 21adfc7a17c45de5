"""Eager's record of the decisions a forward takes on its input sizes, for the transition contract."""
import torch

from ortcheck.stateful.size_reads import size_reads


class Branch(torch.nn.Module):
    def forward(self, x, scale):
        return x / x.shape[0] if x.shape[0] > 2 else x * scale


class Loop(torch.nn.Module):
    def forward(self, x):
        return torch.stack([x[i] * i for i in range(x.shape[0])])


class Plain(torch.nn.Module):
    """Sizes stay tensors' business: a view and a division by a size decide nothing in Python."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        return torch.nn.functional.linear(x.view(x.shape[0], -1), torch.ones(1, 6)) / x.shape[0]


class OnValues(torch.nn.Module):
    def forward(self, x):
        return x * 2 if x.sum().item() > 0 else x


def _holds(reads, *shapes):
    return reads.hold_for([torch.zeros(shape) for shape in shapes])


def test_a_branch_holds_for_the_sizes_that_take_it():
    reads = size_reads(Branch(), (torch.randn(2, 3), torch.randn(3)), {})
    assert _holds(reads, (2, 3), (3,)) and not _holds(reads, (3, 3), (3,))
    assert not _holds(reads, (1, 3), (3,))  # size 1: a constant to symbolic shapes (the unit axes' business)


def test_a_loop_over_a_size_holds_for_that_size_only():
    reads = size_reads(Loop(), (torch.randn(3, 2),), {})
    assert _holds(reads, (3, 2)) and _holds(reads, (3, 5)) and not _holds(reads, (4, 2))


def test_sizes_that_stay_tensors_decide_nothing_and_the_module_is_left_as_it_was():
    module = Plain()
    reads = size_reads(module, (torch.randn(2, 2, 3),), {})
    assert _holds(reads, (5, 3, 2)) and _holds(reads, (7, 2, 3))
    assert reads.decisions is not None and module.calls.item() == 0  # its one guard: 6 features for the linear


def test_decisions_are_recorded_as_the_module_was_at_the_call_and_only_when_other_sizes_ask():
    module = Branch()
    reads = size_reads(module, (torch.randn(2, 3), torch.randn(3)), {})
    module.forward = lambda x, scale: x  # changed after the call: the record keeps the call's module
    assert _holds(reads, (2, 3), (3,)) and reads._decisions is False  # the same sizes: nothing recorded
    assert not _holds(reads, (3, 3), (3,)) and reads.decisions is not None


def test_a_forward_symbolic_shapes_cannot_run_records_nothing_and_permits_nothing():
    reads = size_reads(OnValues(), (torch.randn(3, 2),), {})
    assert _holds(reads, (4, 2)) and reads.decisions is None
