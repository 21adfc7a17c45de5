"""Dropout: backward must drop exactly what forward dropped, so the mask is stashed."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from reference.autodiff import build_gradient_graphs


def test_exported_dropout_grad_is_scaled_mask(harness):
    runner = harness.GradientRunner(torch.nn.Dropout(0.3), [torch.randn(4, 50)], wrt_args=(0,))
    node = next(n for n in runner.graphs.forward.graph.node if n.op_type == "Dropout")
    assert node.output[1] in runner.graphs.stashed
    x, dy = torch.randn(6, 40), np.random.default_rng(0).standard_normal((6, 40)).astype(np.float32)
    run = runner.run([x], [dy])
    mask = run.stash[node.output[1]]
    assert 0 < mask.mean() < 1
    np.testing.assert_allclose(run.outputs[0], x.numpy() * mask / 0.7, rtol=1e-6)
    np.testing.assert_allclose(run.grads["in0"], dy * mask / 0.7, rtol=1e-6)


def _dropout_model(harness, ratio, training, outputs=("y",)):
    initializers = [numpy_helper.from_array(np.array(ratio, np.float32), "ratio")]
    inputs = [("x", TensorProto.FLOAT, ["n", "m"])]
    if isinstance(training, bool):
        initializers.append(numpy_helper.from_array(np.array(training), "training"))
    else:
        inputs.append(("training", TensorProto.BOOL, []))
    node = helper.make_node("Dropout", ["x", "ratio", "training"], list(outputs), name="my_dropout")
    return harness.make_model([node], inputs, [("y", TensorProto.FLOAT, ["n", "m"])], initializers)


def test_single_output_dropout_gains_a_mask_output(harness):
    graphs = build_gradient_graphs(_dropout_model(harness, 0.5, True), ["x"])
    (node,) = graphs.forward.graph.node
    assert len(node.output) == 2 and graphs.stashed == (node.output[1],)
    x, dy = np.ones((8, 16), np.float32), np.full((8, 16), 3.0, np.float32)
    (y, mask), grads = harness.run_gradient_graphs(graphs, {"x": x}, [dy])
    np.testing.assert_array_equal(y, 2.0 * mask)
    np.testing.assert_array_equal(grads["x"], 6.0 * mask)


@pytest.mark.parametrize("ratio,training", [(0.0, True), (0.5, False)])
def test_inactive_dropout_passes_the_gradient_through(ratio, training, harness):
    graphs = build_gradient_graphs(_dropout_model(harness, ratio, training), ["x"])
    assert graphs.stashed == () and graphs.backward.graph.node[0].op_type == "Identity"


@pytest.mark.parametrize("training", [True, False])
def test_run_time_training_flag(training, harness):
    graphs = build_gradient_graphs(_dropout_model(harness, 0.25, None), ["x"])
    x, dy = np.ones((8, 16), np.float32), np.ones((8, 16), np.float32)
    (y, mask), grads = harness.run_gradient_graphs(graphs, {"x": x, "training": np.array(training)}, [dy])
    np.testing.assert_allclose(grads["x"], y)  # y = x·mask·scale with x = 1, as is the gradient
    assert mask.all() != training
