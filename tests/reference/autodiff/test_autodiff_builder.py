"""The builder's contract: which gradients get built, what is stashed, how failures read."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

from reference.autodiff import UnsupportedOpError, build_gradient_graphs

r = torch.randn


def _custom_op_model(harness, op_type="Foo", domain="com.example"):
    nodes = [
        helper.make_node("Relu", ["x"], ["h"], name="relu_1"),
        helper.make_node(op_type, ["h"], ["y"], name="mystery_7", domain=domain),
    ]
    model = harness.make_model(nodes, [("x", TensorProto.FLOAT, ["n"])], [("y", TensorProto.FLOAT, ["n"])])
    model.opset_import.append(helper.make_opsetid(domain, 1))
    return model


def test_unsupported_custom_op_names_op_and_node(harness):
    with pytest.raises(UnsupportedOpError) as error:
        build_gradient_graphs(_custom_op_model(harness), ["x"])
    message = str(error.value)
    assert "'com.example.Foo'" in message and "'mystery_7'" in message and "supported: " in message
    assert (error.value.op_type, error.value.node_name) == ("com.example.Foo", "mystery_7")


def test_unsupported_exported_op_names_op_and_node(harness):
    model = harness.export(lambda a, b: torch.atan(a) @ b, [r(2, 3), r(3, 4)]).model
    with pytest.raises(UnsupportedOpError, match=r"op 'Atan' \(node '/Atan'\)"):
        build_gradient_graphs(model, ["in0"])


def test_dynamic_squeeze_exports_as_if_which_is_unsupported(harness):
    """The If reads x only inside its branches: still on the differentiable path."""
    model = harness.export(lambda x: x.squeeze(-1) * 2.0, [r(2, 3, 1)]).model
    with pytest.raises(UnsupportedOpError, match="op 'If'"):
        build_gradient_graphs(model, ["in0"])


def test_unsupported_op_off_the_differentiable_path_is_fine(harness):
    def fn(x, frozen):
        return x * torch.einsum("ij,ij->ij", frozen, frozen)

    runner = harness.check_gradients(fn, [r(2, 3), r(2, 3)], wrt_args=(0,))
    assert "Einsum" in harness.op_types(runner.graphs.forward)


def test_no_rules_built_for_branches_without_trainable_inputs(harness):
    def fn(x, w):
        return torch.tanh(x).exp() * w

    runner = harness.GradientRunner(fn, [r(2, 3), r(2, 3)], wrt_args=(1,), dynamic=False)
    assert harness.op_types(runner.graphs.backward) == ["Mul"]
    assert runner.graphs.stashed == ("/Exp_output_0",)


def test_non_differentiable_paths_and_missing_gradients(harness):
    def fn(x, y, ids):
        mask = torch.arange(x.shape[-1]) < y.shape[0]  # Shape, Range, Less: no gradient, not unsupported
        return x.masked_fill(mask, 0.0) + ids.float()

    runner = harness.check_gradients(fn, [r(2, 3), r(2), torch.tensor([1, 2, 3])], wrt_args=(0, 1))
    assert runner.graphs.input_grads["in1"] is None  # y only reaches the output through its shape
    graphs = build_gradient_graphs(runner.exported.model, ["in0", "in2"])
    assert graphs.input_grads["in2"] is None  # integer input


def test_requires_grad_must_name_model_inputs(harness):
    with pytest.raises(ValueError, match="not_an_input"):
        build_gradient_graphs(_custom_op_model(harness), ["not_an_input"])


def test_outputs_grads_only_for_float_outputs_in_order(harness):
    def fn(x):
        y = x.softmax(-1)
        return y.argmax(-1), y, (y * y).sum()

    runner = harness.check_gradients(fn, [r(3, 4)])
    graphs = runner.graphs
    assert graphs.output_grad_names == ("out1_grad", "out2_grad")
    assert [i.name for i in graphs.backward.graph.input][:2] == list(graphs.output_grad_names)
    assert "out1" in graphs.stashed  # a model output that backward reads: listed again, by name


def test_graph_signatures(harness):
    module = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    runner = harness.GradientRunner(module, [r(3, 4)], wrt_args=(0,))
    graphs, model = runner.graphs, runner.exported.model
    assert [i.name for i in graphs.forward.graph.input] == [i.name for i in model.graph.input]
    outputs = [o.name for o in graphs.forward.graph.output]
    assert outputs == ["out0", *graphs.stashed]
    backward_inputs = [i.name for i in graphs.backward.graph.input]
    assert backward_inputs == [*graphs.output_grad_names, *graphs.forward_inputs_needed, *graphs.stashed]
    assert [o.name for o in graphs.backward.graph.output] == list(graphs.input_grads.values())
    assert set(graphs.input_grads) == {"in0", "0.weight", "0.bias", "2.weight", "2.bias"}


class TiedHead(torch.nn.Module):
    """The same parameter read by Gather and by MatMul: its gradient is the sum of both."""

    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(7, 4)

    def forward(self, ids):
        return self.embedding(ids) @ self.embedding.weight.t()


def test_parameter_used_twice_accumulates(harness):
    ids, other_ids = torch.tensor([[1, 3, 1]]), torch.tensor([[6]])
    runner = harness.check_gradients(TiedHead(), [ids], wrt_args=(), more_args=[[other_ids]])
    assert "Sum" in harness.op_types(runner.graphs.backward)


def test_gradient_shared_by_two_inputs_gets_two_outputs(harness):
    runner = harness.check_gradients(lambda a, b: torch.tanh(a + b), [r(2, 3), r(2, 3)], wrt_args=(0, 1))
    grads = runner.graphs.input_grads
    assert grads["in0"] != grads["in1"]


def test_input_passed_straight_to_an_output(harness):
    model = harness.make_model([helper.make_node("Identity", ["x"], ["y"])],
                               [("x", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, [2])])
    graphs = build_gradient_graphs(model, ["x"])
    _, grads = harness.run_gradient_graphs(graphs, {"x": np.ones(2, np.float32)}, [np.array([1.0, 2.0], np.float32)])
    np.testing.assert_array_equal(grads["x"], [1.0, 2.0])


def test_variadic_sum_broadcasts_each_input(harness):
    """torch never emits Sum, but the builder's accumulation does and other exporters might."""
    shapes = {"a": [2, 3], "b": [3], "c": [2, 1]}
    inputs = [(n, TensorProto.FLOAT, s) for n, s in shapes.items()]
    model = harness.make_model([helper.make_node("Sum", list(shapes), ["y"])], inputs, [("y", TensorProto.FLOAT, None)])
    tensors = {n: r(s).requires_grad_() for n, s in shapes.items()}
    dy = r(2, 3)
    expected = torch.autograd.grad(sum(tensors.values()), list(tensors.values()), dy)
    feeds = {n: t.detach().numpy() for n, t in tensors.items()}
    _, grads = harness.run_gradient_graphs(build_gradient_graphs(model, list(shapes)), feeds, [dy.numpy()])
    for name, want in zip(shapes, expected):
        torch.testing.assert_close(torch.from_numpy(grads[name]), want)


def test_models_older_than_opset_18_are_refused(harness):
    model = _custom_op_model(harness)
    model.opset_import[0].version = 17
    with pytest.raises(ValueError, match="opset 17"):
        build_gradient_graphs(model, ["x"])
