"""An axis traced at size 1 may be specialized: a first batch of one, then a larger one, trains as
in eager: the reference re-exports where the axes of size 1 change, as the transition contract
permits, and for no other size change. transformers' llama and mixtral did this: ``if batch_size !=
position_ids.shape[0]: expand`` traced at batch 1 kept one row of positions, and batch 3 gathered
out of its bounds."""
import pytest
import torch

from reference import ReferenceModule
from ortcheck.models.size_one import RowsLikePositions, ScalesASingleRow
from reference.transitions.state_machine import REUSED, UNIT_AXES_CHANGED


@pytest.mark.parametrize("module", [RowsLikePositions, ScalesASingleRow])
def test_a_first_batch_of_one_then_larger_batches_train_as_in_eager(module):
    wrapped, eager = ReferenceModule(module()), module()
    expected = [(1, "first forward"), (2, UNIT_AXES_CHANGED), (2, REUSED), (3, UNIT_AXES_CHANGED)]
    for seed, (batch, (exports, reason)) in enumerate(zip((1, 3, 5, 1), expected)):
        x = torch.randn(batch, 4, generator=torch.Generator().manual_seed(seed))
        x, x_eager = (x.clone().requires_grad_() for _ in range(2))
        out, out_eager = wrapped(x), eager(x_eager)
        torch.testing.assert_close(out, out_eager)
        out.pow(2).sum().backward()
        out_eager.pow(2).sum().backward()
        torch.testing.assert_close(x.grad, x_eager.grad)
        torch.testing.assert_close(wrapped.module.weight.grad, eager.weight.grad)
        wrapped.module.weight.grad = eager.weight.grad = None
        counters = wrapped.counters()
        assert (counters.exports, counters.last_reason) == (exports, reason), f"batch of {batch}"


def test_an_axis_always_one_never_re_exports():
    """A feature axis of 1 (a regression target) stays 1: new batch sizes reuse the graph."""
    wrapped = ReferenceModule(torch.nn.Linear(1, 1))
    for batch in (2, 3, 4):
        wrapped(torch.randn(batch, 1))
    assert (wrapped.counters().exports, wrapped.counters().last_reason) == (1, REUSED)
