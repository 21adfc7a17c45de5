"""The reference at the edges torch's exporter gets wrong (found by OpInfo's deeper samples): unusual
arguments, 0-d and broadcast operands, empty inputs; each against eager, outputs and gradients."""
import pytest
import torch
import torch.nn.functional as F

from ortcheck.checks.one_op import OneOp
from reference import ReferenceModule


def _matches_eager(fn, *inputs):
    """In float64, so float32's last-bit differences between two correct computations don't count."""
    inputs = [x.double() if x.is_floating_point() else x for x in inputs]
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    mine = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    expected, actual = fn(*leaves), ReferenceModule(OneOp(fn))(*mine)
    assert actual.shape == expected.shape
    torch.testing.assert_close(actual, expected)
    weights = torch.randn(expected.shape, dtype=expected.dtype)
    (expected * weights).sum().backward(), (actual * weights).sum().backward()
    for want, got in zip(leaves, mine):
        if want.requires_grad:
            assert (got.grad is None) == (want.grad is None)
            if want.grad is not None:
                torch.testing.assert_close(got.grad, want.grad)


_DRAWS = torch.Generator().manual_seed(0)


def r(*shape):
    return torch.randn(*shape, generator=_DRAWS)


CASES = {
    # silently wrong before: values, or a shape
    "var_fractional_correction": (lambda x: torch.var(x, dim=1, correction=1.3), [r(4, 5, 3)]),
    "std_keepdim_of_everything": (lambda x: torch.std(x, correction=0.5, keepdim=True), [r(3, 4)]),
    "var_mean_both_outputs": (lambda x: torch.stack(torch.var_mean(x, dim=(0, 2), correction=2)), [r(4, 2, 3)]),
    "addmm_empty_inner_dim_scales_the_input": (lambda x, a, b: torch.addmm(x, a, b, beta=0.2, alpha=0.6),
                                               [r(3, 4), r(3, 0), r(0, 4)]),
    "addcmul_of_0d_stays_0d": (lambda x, a, b: torch.addcmul(x, a, b, value=3.14), [r(()), r(()), r(())]),
    "embedding_bag_negative_padding_idx": (
        lambda w: F.embedding_bag(torch.tensor([4, 1, 1, 0, 4, 4]), w, torch.tensor([0, 3]), mode="mean", padding_idx=-1),
        [r(5, 3)]),
    "cosine_similarity_of_broadcast_operands": (lambda a, b: F.cosine_similarity(a, b, dim=-2), [r(1, 2, 3), r(2, 1, 3)]),
    "cosine_similarity_of_0d": (lambda a, b: F.cosine_similarity(a, b, dim=0), [r(()), r(())]),
    "circular_pad_with_negative_pads": (lambda x: F.pad(x, (-1, 1, -2, 1), mode="circular"), [r(1, 2, 4, 4)]),
    "diff_of_order_0_is_the_input": (lambda x, a: torch.diff(x, n=0, dim=0, append=a), [r(3, 2), r(1, 2)]),
    "bce_with_logits_large_logits": (lambda x, t: F.binary_cross_entropy_with_logits(x, t), [r(4) * 30, torch.rand(4, generator=_DRAWS)]),
    "bce_with_logits_pos_weight": (lambda x, t: F.binary_cross_entropy_with_logits(
        x, t, pos_weight=torch.tensor([0.5, 1.0, 2.5])), [r(2, 3), torch.rand(2, 3, generator=_DRAWS)]),
    "max_along_dim_gives_its_one_index_the_gradient": (lambda x: x.max(dim=1).values,
                                                       [torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])]),
    "index_fill_repeated_index_fills_once": (lambda x, v: x.index_fill(1, torch.tensor([0, 2, 0]), v), [r(3, 4), r(())]),
    "vector_norm_fractional_order_at_zero": (lambda x: torch.linalg.vector_norm(x, ord=0.5),
                                             [torch.tensor([0.0, 1.0, -2.0])]),
    "vector_norm_fractional_order_of_zeros": (lambda x: torch.linalg.vector_norm(x, ord=3.5, dim=1), [torch.zeros(2, 3)]),
    "linalg_norm_keepdim_of_everything": (lambda x: torch.linalg.norm(x, keepdim=True), [r(2, 3)]),
    # refused or crashed before
    "flip_no_dims": (lambda x: torch.flip(x, ()), [r(2, 3)]),
    "roll_flattened_beyond_the_size": (lambda x: torch.roll(x, 7), [r(2, 3)]),
    "roll_flattened_empty": (lambda x: torch.roll(x, 2), [r(0, 3)]),
    "cat_skips_a_legacy_empty_vector": (lambda e, x: torch.cat([e, x], dim=1), [r(0), r(2, 3)]),
    "unflatten_beside_an_empty_dim": (lambda x: x.unflatten(0, (2, 2)), [r(4, 0)]),
    "nll_loss_of_one_unbatched_sample": (lambda x: F.nll_loss(x, torch.tensor(1), reduction="none"), [r(3)]),
    "input_the_graph_never_reads_gets_none": (lambda x, other: x.to(other) * 2, [r(2, 3), r(2, 3).double()]),
    "layer_norm_of_an_empty_batch": (lambda x: F.layer_norm(x, (1,)), [r(0, 1)]),
    "pixel_shuffle_of_an_empty_image": (lambda x: F.pixel_shuffle(x, 1), [r(1, 1, 0, 1)]),
    "dropout_of_everything": (lambda x: F.dropout(x, p=1.0, training=True), [r(2, 3)]),
    "channel_dropout_of_everything": (lambda x: F.dropout2d(x, p=1.0, training=True), [r(2, 3, 4, 4)]),
    "logsigmoid_float64": (F.logsigmoid, [r(5).double() * 40]),
    "masked_select_broadcasts_the_input": (lambda x: torch.masked_select(x, torch.eye(3, dtype=torch.bool)), [r(3)]),
}
ZERO_D = {
    "softmax": lambda x: torch.softmax(x, 0),
    "log_softmax": lambda x: torch.log_softmax(x, -1),
    "topk": lambda x: torch.topk(x, 1).values,
    "squeeze": lambda x: x.squeeze(0),
    "gather": lambda x: torch.gather(x, 0, torch.tensor(0)),
    "scatter": lambda x: torch.scatter(x, 0, torch.tensor(0), x * 2),
    "cumsum": lambda x: torch.cumsum(x, 0),
    "amax": lambda x: x.amax(dim=0),
    "max_along_dim": lambda x: torch.max(x, 0).values,
    "norm": lambda x: torch.norm(x, 2, 0),
    "normalize": lambda x: F.normalize(x, p=1.2, dim=0),
    "logsumexp": lambda x: torch.logsumexp(x, 0, keepdim=True),
    "masked_select": lambda x: torch.masked_select(x, torch.tensor(True)),
}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_edges_are_computed_as_eagers(case):
    fn, inputs = CASES[case]
    torch.manual_seed(0)  # the cotangent weights
    _matches_eager(fn, *inputs)


@pytest.mark.parametrize("op", ZERO_D, ids=str)
def test_0d_operands_of_ops_taking_a_dim_are_computed_as_eagers(op):
    """ATen treats a 0-d tensor as 1-d there; onnxruntime refused the ops' axes, or shapes changed."""
    torch.manual_seed(0)
    _matches_eager(ZERO_D[op], torch.tensor(1.5))
