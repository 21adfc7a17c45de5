"""Data-movement rules (reshape, transpose, slicing, gathering...) against PyTorch autograd,
re-run at other sizes so no size may be baked into the graphs."""
import pytest
import torch


r = torch.randn

CASES = {
    "view_transpose": (lambda x: x.view(x.shape[0], -1, 2).transpose(1, 2) * 1.0, [r(2, 3, 4)], [[r(3, 2, 6)]]),
    "reshape_minus_one": (lambda x: x.reshape(-1) * torch.arange(24.0), [r(2, 3, 4)], []),
    "permute": (lambda x: x.permute(2, 0, 1) * 1.0, [r(2, 3, 4)], [[r(1, 2, 5)]]),
    "unsqueeze_squeeze_dim": (lambda x: x.unsqueeze(1).squeeze(1) * 2.0, [r(2, 3)], [[r(4, 5)]]),
    "expand": (lambda x: x.expand(2, 3, 4) * torch.arange(24.0).reshape(2, 3, 4), [r(3, 1)], []),
    "expand_as_dynamic": (lambda x, y: x.expand_as(y) * y, [r(1, 4), r(3, 4)], [[r(1, 2), r(5, 2)]]),
    "concat": (lambda x, y: torch.cat([x, y, x], dim=1) * 1.0, [r(2, 3), r(2, 1)], [[r(1, 2), r(1, 4)]]),
    "slice_unit_steps": (lambda x: x[1:, :-1, 1:3] * 1.0, [r(3, 4, 5)], [[r(2, 3, 4)]]),
    "slice_negative_and_past_end": (lambda x: x[-2:, :100] * 1.0, [r(4, 3)], [[r(5, 2)]]),
    "slice_with_step": (lambda x: x[::2, 1::3] * 1.0, [r(5, 7)], [[r(4, 8)]]),
    "split_chunk": (lambda x: x.split(2, -1)[1] * x[..., 1:3] + x.chunk(2, -1)[0], [r(2, 3, 4)], [[r(1, 1, 4)]]),
    "split_unused_part": (lambda x: x.split([1, 3], 0)[1] * 2.0, [r(4, 2)], []),
    "flatten": (lambda x: torch.flatten(x, 1) * 1.0, [r(2, 3, 4)], [[r(3, 1, 2)]]),
    "select": (lambda x: x[:, 1] * 1.0, [r(3, 4, 2)], [[r(2, 5, 3)]]),
    "index_negative": (lambda x: x[-1] * x[..., -2].sum(), [r(3, 4)], []),
    "gather_elements": (lambda x, i: torch.gather(x, 1, i), [r(3, 4), torch.tensor([[0, 0], [3, 1], [2, 2]])], []),
    "triu": (lambda x: torch.triu(x, 1) * 1.0, [r(3, 4, 4)], [[r(1, 2, 2)]]),
    "tril": (lambda x: torch.tril(x) * 1.0, [r(4, 3)], []),
}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_data_movement(case, harness):
    fn, args, more = CASES[case]
    harness.check_gradients(fn, args, wrt_args=[i for i, a in enumerate(args) if a.is_floating_point()], more_args=more)


@pytest.mark.parametrize("squeeze", [lambda x: x.squeeze(-1), lambda x: x.squeeze()], ids=["dim", "all"])
def test_squeeze_of_size_one_dims_exported_static(squeeze, harness):
    """With the size-1 dim dynamic, torch exports squeeze(dim) as an If (see the builder tests)."""
    harness.check_gradients(lambda x: squeeze(x) * 2.0, [r(1, 3, 1)], dynamic=False)


@pytest.mark.parametrize("steps,backward_op", [(1, "Pad"), (2, "ScatterElements")])
def test_slice_grad_pads_unit_steps_and_scatters_others(steps, backward_op, harness):
    runner = harness.check_gradients(lambda x: x[:, 1::steps] * 1.0, [r(2, 7)], more_args=[[r(3, 4)]])
    assert backward_op in harness.op_types(runner.graphs.backward)


def test_embedding_lookup_accumulates_repeated_ids(harness):
    ids = torch.tensor([[1, 2, 1], [4, 1, 0]])
    runner = harness.check_gradients(torch.nn.Embedding(6, 4), [ids], wrt_args=(), more_args=[[torch.tensor([[5, 5]])]])
    assert "ScatterND" in harness.op_types(runner.graphs.backward)


def test_gather_along_inner_axis_with_matrix_indices(harness):
    ids = torch.tensor([[0, 2], [2, 2]])
    harness.check_gradients(lambda x, i: x[:, i] * 1.0, [r(3, 4, 5), ids], wrt_args=(0,))


@pytest.mark.parametrize("reduce", ["add", "overwrite"])
def test_scatter_elements(reduce, harness):
    def fn(data, src, index):
        if reduce == "add":
            return data.scatter_add(0, index, src)
        return data.scatter(0, index, src)

    index = torch.tensor([[0, 1, 4], [3, 0, 2]])  # distinct per column: overwriting is deterministic
    runner = harness.check_gradients(fn, [r(5, 3), r(2, 3), index], wrt_args=(0, 1))
    assert "ScatterElements" in harness.op_types(runner.graphs.forward)


def test_scatter_nd_by_index_put(harness):
    """Distinct rows: torch exports accumulate=True as a plain ScatterND into zeros plus Add, which
    loses repeated rows already in the forward pass (an exporter issue, not a gradient one)."""
    def fn(data, src, rows):
        return data.index_put((rows,), src, accumulate=True)

    runner = harness.check_gradients(fn, [r(5, 3), r(3, 3), torch.tensor([4, 0, 2])], wrt_args=(0, 1))
    assert "ScatterND" in harness.op_types(runner.graphs.forward)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_gradient_goes_back_where_each_value_came_from(largest, harness):
    """As a mixture-of-experts router uses it: k of the last axis; dims and k kept at other sizes."""
    x = torch.randn(3, 5, 6, dtype=torch.float64)
    harness.check_gradients(lambda t: torch.topk(t, 2, dim=-1, largest=largest).values, [x],
                            more_args=[[torch.randn(2, 4, 6, dtype=torch.float64)]])
