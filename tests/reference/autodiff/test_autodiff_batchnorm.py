"""BatchNormalization with given statistics (eval) against PyTorch autograd in float64: the input,
scale, bias, mean and variance gradients, for inputs of rank 2 to 4; batch statistics refused."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

from reference.autodiff import UnsupportedOpError, build_gradient_graphs

INPUTS = ["x", "scale", "B", "mean", "var"]
EPSILON = 0.25  # exact in float32 (the attribute's type), so both sides add the same number


def _model(harness, rank: int, training_mode: int = 0):
    node = helper.make_node("BatchNormalization", INPUTS, ["y"], epsilon=EPSILON, training_mode=training_mode)
    x_shape = [f"d{i}" for i in range(rank)]
    inputs = [("x", TensorProto.DOUBLE, x_shape), *[(name, TensorProto.DOUBLE, ["C"]) for name in INPUTS[1:]]]
    return harness.make_model([node], inputs, [("y", TensorProto.DOUBLE, x_shape)])


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), (2, 3, 2, 4)], ids=str)
def test_batch_normalization_with_given_statistics(shape, harness):
    generator = torch.Generator().manual_seed(len(shape))
    channels = shape[1]
    values = {"x": torch.randn(shape, generator=generator, dtype=torch.float64),
              **{name: torch.randn(channels, generator=generator, dtype=torch.float64) for name in INPUTS[1:4]},
              "var": torch.rand(channels, generator=generator, dtype=torch.float64) + 0.5}
    graphs = build_gradient_graphs(_model(harness, len(shape)), INPUTS)
    cotangent = torch.randn(shape, generator=generator, dtype=torch.float64)
    outputs, grads = harness.run_gradient_graphs(graphs, {k: v.numpy() for k, v in values.items()}, [cotangent.numpy()])

    eager = {name: value.clone().requires_grad_(name in INPUTS[:3]) for name, value in values.items()}
    y = F.batch_norm(eager["x"], eager["mean"], eager["var"], eager["scale"], eager["B"], training=False, eps=EPSILON)
    expected = dict(zip(INPUTS, torch.autograd.grad(y, [eager[name] for name in INPUTS[:3]], cotangent)))
    # torch's kernel differentiates no statistic: those gradients come from the formula, itself held to the kernel
    leaves = {name: value.clone().requires_grad_() for name, value in values.items()}
    per_channel = [-1, *[1] * (len(shape) - 2)]
    mean, var, scale, bias = (leaves[name].reshape(per_channel) for name in ("mean", "var", "scale", "B"))
    formula = (leaves["x"] - mean) / torch.sqrt(var + EPSILON) * scale + bias
    torch.testing.assert_close(formula, y)
    expected.update(zip(INPUTS[3:], torch.autograd.grad(formula, [leaves["mean"], leaves["var"]], cotangent)))
    torch.testing.assert_close(torch.from_numpy(np.asarray(outputs[0])), y.detach())
    for name, want in expected.items():
        torch.testing.assert_close(torch.from_numpy(grads[name]), want, msg=lambda m, n=name: f"d/d{n}: {m}")

def test_only_the_wanted_gradients_are_built(harness):
    """Buffers (mean, var) need none: the rule builds dx, dscale and dB alone."""
    graphs = build_gradient_graphs(_model(harness, 3), ["x", "scale", "B"])
    assert set(graphs.input_grads) == {"x", "scale", "B"} and all(graphs.input_grads.values())


def test_batch_statistics_are_refused_by_name(harness):
    with pytest.raises(UnsupportedOpError, match=r"BatchNormalization\(training_mode=1\)"):
        build_gradient_graphs(_model(harness, 3, training_mode=1), ["x"])
