"""Reduce* rules against PyTorch autograd: L1, log-sum-exp, and max/min splitting ties evenly as
eager's amax/amin do; GatherND (``x[mask]``) scatter-adding its gradient back."""
import pytest
import torch

from reference.autodiff import build_gradient_graphs

_DRAWS = torch.Generator().manual_seed(0)


def r(*shape):
    return torch.randn(*shape, generator=_DRAWS)


CASES = {
    "l1_norm_over_a_dim": (lambda x: x.norm(p=1, dim=1), [r(3, 4)]),
    "l1_norm_keepdim_with_zeros": (lambda x: x.norm(p=1, dim=0, keepdim=True), [torch.tensor([[0.0, 1.0], [-2.0, 0.0]])]),
    "logsumexp_over_a_dim": (lambda x: torch.logsumexp(x, dim=1), [r(3, 4)]),
    "logsumexp_keepdim": (lambda x: torch.logsumexp(x, dim=(0, 2), keepdim=True), [r(2, 3, 4)]),
    "amax_over_a_dim": (lambda x: x.amax(dim=1), [r(3, 4)]),
    "amin_of_everything": (lambda x: x.amin(), [r(3, 4)]),
    "amax_ties_split_evenly": (lambda x: x.amax(dim=1), [torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])]),
    "amin_ties_split_evenly": (lambda x: x.amin(), [torch.tensor([[1.0, 0.5], [0.5, 4.0]])]),
    "boolean_mask_indexing": (lambda x: x[x > 0] * 3, [r(3, 4)]),
}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reduction_gradients_match_autograd(case, harness):
    fn, args = CASES[case]
    harness.check_gradients(fn, args)


@pytest.mark.parametrize("op_type, fn", [("ReduceL1", lambda x: x.norm(p=1, dim=1)),
                                         ("ReduceLogSumExp", lambda x: torch.logsumexp(x, dim=1)),
                                         ("ReduceMax", lambda x: x.amax(dim=1)), ("ReduceMin", lambda x: x.amin(dim=1)),
                                         ("GatherND", lambda x: x[x > 0])])
def test_each_case_exports_the_op_its_rule_differentiates(op_type, fn, harness):
    """The cases above reach the rules they are named for (not a decomposition torch chose instead)."""
    assert op_type in harness.op_types(harness.export(fn, [r(3, 4)]).model)
