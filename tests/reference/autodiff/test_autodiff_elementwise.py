"""Elementwise rules against PyTorch autograd, with broadcasting settled at build time and at run time."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

from reference.autodiff import build_gradient_graphs


r = torch.randn


def positive(*shape):
    return torch.rand(*shape) + 0.5


BINARY = {
    # name: (fn, export-time args, other-size args)
    "add_broadcast": (torch.add, [r(3, 1, 5), r(4, 5)], [r(2, 1, 3), r(6, 3)]),
    "add_broadcast_flips_at_run_time": (torch.add, [r(3, 1, 5), r(4, 5)], [r(3, 4, 5), r(1, 5)]),
    "add_both_sides_broadcast": (torch.add, [r(2, 1), r(1, 3)], [r(4, 1), r(1, 2)]),
    "add_scalar_like": (torch.add, [r(2, 3), r(())], [r(4, 1), r(())]),
    "add_size_one_dims": (torch.add, [r(1, 1, 5), r(1, 4, 1)], [r(1, 1, 2), r(1, 3, 1)]),
    "sub_broadcast": (torch.sub, [r(3, 1, 5), r(4, 5)], [r(2, 3, 5), r(1, 5)]),
    "mul_broadcast": (torch.mul, [r(2, 3, 4), r(3, 1)], [r(1, 2, 2), r(2, 2)]),
    "div_broadcast": (torch.div, [r(2, 3, 4), positive(4)], [r(3, 1, 2), positive(2)]),
    "pow_tensor_exponent": (torch.pow, [positive(2, 3), r(3)], [positive(1, 2), r(2)]),
    "maximum_broadcast": (torch.maximum, [r(3, 1, 5), r(4, 5)], [r(2, 1, 3), r(6, 3)]),
    "minimum_broadcast": (torch.minimum, [r(3, 1, 5), r(4, 5)], [r(2, 1, 3), r(6, 3)]),
    "maximum_ties_split_evenly": (torch.maximum, [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 3.0])], []),
    "prelu_channels": (lambda x, w: F.prelu(x, w), [r(2, 3, 4), torch.rand(3)], [r(1, 3, 2), torch.rand(3)]),
    "prelu_shared": (lambda x, w: F.prelu(x, w), [r(2, 3, 4), torch.rand(1)], [r(1, 3, 2), torch.rand(1)]),
    "sum_of_three": (lambda a, b: a + b + a * 2, [r(2, 3), r(3)], []),
}


@pytest.mark.parametrize("case", BINARY, ids=str)
def test_binary_ops_with_broadcasting(case, harness):
    fn, args, more = BINARY[case]
    harness.check_gradients(fn, args, wrt_args=(0, 1), more_args=[more] if more else [])


@pytest.mark.parametrize("fn", [torch.add, torch.mul, torch.div], ids=lambda f: f.__name__)
def test_static_shapes_reduce_at_build_time(fn, harness):
    runner = harness.check_gradients(fn, [positive(3, 1, 5), positive(4, 5)], wrt_args=(0, 1), dynamic=False)
    assert not {"Compress", "Shape"} & {n.op_type for n in runner.graphs.backward.graph.node}


def test_one_side_only_builds_one_gradient(harness):
    runner = harness.check_gradients(torch.mul, [r(2, 3), r(2, 3)], wrt_args=(0,))
    assert runner.graphs.forward_inputs_needed == ("in1",)  # in0 is never read: its gradient is dy * in1


UNARY = {
    "neg": (torch.neg, r(2, 3)),
    "sqrt": (torch.sqrt, positive(2, 3)),
    "square": (lambda x: x ** 2, r(2, 3)),
    "cube": (lambda x: x.pow(3), r(2, 3)),
    "pow_half": (lambda x: x ** 0.5, positive(2, 3)),
    "scale_by_constant": (lambda x: x / 3.0 - 1.5 * x, r(2, 3)),
    "relu": (torch.relu, r(4, 5)),
    "tanh": (torch.tanh, r(2, 3)),
    "sigmoid": (torch.sigmoid, r(2, 3)),
    "exp": (torch.exp, r(2, 3)),
    "log": (torch.log, positive(2, 3)),
    "erf": (torch.erf, r(2, 3)),
    "gelu": (F.gelu, r(2, 3, 4)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), r(2, 3, 4)),
    "gelu_erf_decomposed": (lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2))), r(2, 3, 4)),
    "gelu_tanh_decomposed": (lambda x: x * 0.5 * (1 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))), r(2, 3)),
    "cast_float_double_float": (lambda x: (x.double() * 2).float(), r(2, 3)),
    "cast_through_half": (lambda x: x.half().float() * 2, torch.tensor([[0.5, -1.25, 3.0]])),
    "identity_via_clone": (lambda x: x.clone() + 0, r(2, 3)),
    "softplus": (F.softplus, 3 * r(2, 3)),
    "softplus_beta": (lambda x: F.softplus(x, beta=2.0), 3 * r(2, 3)),
    "elu": (F.elu, 2 * r(3, 4)),
    "elu_alpha": (lambda x: F.elu(x, alpha=0.5), 2 * r(3, 4)),
    "hardswish": (F.hardswish, 4 * r(4, 5)),
    "relu6": (F.relu6, 4 * r(4, 5)),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 1.5), 2 * r(4, 5)),
    "clamp_both_bounds": (lambda x: x.clamp(-0.3, 0.4), r(4, 5)),
    "clamp_min_only": (lambda x: torch.clamp(x, min=0.1), r(4, 5)),
    "clamp_max_only": (lambda x: torch.clamp(x, max=-0.2), r(4, 5)),
    "hardsigmoid": (F.hardsigmoid, 4 * r(4, 5)),
    "selu": (F.selu, 2 * r(3, 4)),
    "celu": (lambda x: F.celu(x, alpha=0.7), 2 * r(3, 4)),
    "max_with_a_constant": (lambda x: torch.clamp_min(x.norm(dim=-1), 1.5), r(3, 4)),
    "max_pool1d_overlapping": (lambda x: F.max_pool1d(x, 3, stride=1), r(2, 3, 7)),
    "max_pool2d_padded_dilated": (lambda x: F.max_pool2d(x, 2, stride=1, padding=1, dilation=2), r(1, 2, 4, 5)),
}


@pytest.mark.parametrize("case", UNARY, ids=str)
def test_unary_ops(case, harness):
    fn, x = UNARY[case]
    harness.check_gradients(fn, [x], more_args=[[x[:1]]])


def test_where_masked_fill_and_broadcast_branches(harness):
    def fn(x, y, mask_source):
        filled = x.masked_fill(mask_source > 0, -1e4)
        return torch.where(x > 0, filled, y)

    harness.check_gradients(fn, [r(2, 3, 4), r(3, 1), r(4)], wrt_args=(0, 1),
                            more_args=[[r(1, 2, 5), r(2, 1), r(5)]])


def test_clip_gradient_flows_through_both_bounds_and_to_bounds_that_require_grad(harness):
    """At a bound the gradient still flows (PyTorch's clamp); tensor bounds get what passed them."""
    x = torch.tensor([[-1.0, -0.5, 0.0, 0.5, 1.0, 2.0]])
    harness.check_gradients(lambda x: torch.clamp(x, -0.5, 1.0) * torch.arange(6.0), [x])
    harness.check_gradients(lambda x, low, high: torch.clamp(x, low, high) * torch.arange(6.0),
                            [x, torch.tensor(-0.5), torch.tensor(1.0)], wrt_args=(0, 1, 2))


def test_value_read_twice_accumulates(harness):
    harness.check_gradients(lambda x: x * x + torch.tanh(x) * x, [r(3, 4)])


def test_castlike_casts_the_gradient_back(harness):
    """torch emits Cast; CastLike (other exporters) shares its rule."""
    model = harness.make_model(
        [helper.make_node("CastLike", ["x", "like"], ["y"])],
        [("x", TensorProto.FLOAT, ["n"]), ("like", TensorProto.DOUBLE, [])], [("y", TensorProto.DOUBLE, ["n"])],
    )
    graphs = build_gradient_graphs(model, ["x"])
    feeds = {"x": np.ones(3, np.float32), "like": np.array(0.0)}
    _, grads = harness.run_gradient_graphs(graphs, feeds, [np.array([1.0, 2.0, 3.0])])
    assert grads["x"].dtype == np.float32 and grads["x"].tolist() == [1.0, 2.0, 3.0]


def test_castlike_gives_the_input_lending_its_type_a_zero_gradient(harness):
    """Only the type of ``like`` is read: where it requires grad (our grouped-matmul symbolic types a
    zero after the rows it multiplies) its gradient is zeros of its shape and type, not missing."""
    model = harness.make_model(
        [helper.make_node("CastLike", ["x", "like"], ["y"]), helper.make_node("Mul", ["y", "like"], ["z"])],
        [("x", TensorProto.DOUBLE, ["n"]), ("like", TensorProto.FLOAT, ["n"])], [("z", TensorProto.FLOAT, ["n"])],
    )
    feeds = {"x": np.array([1.0, 2.0, 3.0]), "like": np.array([4.0, 5.0, 6.0], np.float32)}
    _, grads = harness.run_gradient_graphs(build_gradient_graphs(model, ["x", "like"]), feeds,
                                           [np.ones(3, np.float32)])
    assert grads["x"].dtype == np.float64 and grads["x"].tolist() == [4.0, 5.0, 6.0]
    assert grads["like"].dtype == np.float32 and grads["like"].tolist() == [1.0, 2.0, 3.0]  # from Mul only


def test_gelu_node_gradient_tanh_form(harness):
    """A hand-built ``Gelu(approximate="tanh")`` node (opset 20), in float64: torch exports tanh
    GELU through our own float64 symbolic, never as this node, so only a graph built here reaches
    the rule's tanh form. (The exact form's Erf has no float64 kernel in onnxruntime; exports reach it.)"""
    approximate = "tanh"
    model = harness.make_model([helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)],
                               [("x", TensorProto.DOUBLE, ["a", "b"])], [("y", TensorProto.DOUBLE, None)])
    x = torch.linspace(-6, 6, 2 * 61, dtype=torch.float64).reshape(2, 61).requires_grad_()
    y = F.gelu(x, approximate=approximate)
    seed = torch.randn(y.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    (want,) = torch.autograd.grad(y, x, seed)
    outputs, grads = harness.run_gradient_graphs(build_gradient_graphs(model, ["x"]), {"x": x.detach().numpy()},
                                                 [seed.numpy()])
    torch.testing.assert_close(torch.from_numpy(outputs[0]), y.detach())
    torch.testing.assert_close(torch.from_numpy(grads["x"]), want, rtol=1e-12, atol=1e-12)
