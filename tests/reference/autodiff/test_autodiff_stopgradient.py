"""``detach()`` as the reference exports it (``reference.StopGradient``) stops gradients as in
PyTorch, in float64; onnxruntime runs the op (a model-local function)."""
import torch

from reference import nested_io
from reference.autodiff import build_gradient_graphs
from reference.export import export_module


class Detached(torch.nn.Module):
    def forward(self, x, y):
        return x * x.detach() + torch.tanh(y.detach()) * y


def test_detach_stops_the_gradient(harness):
    generator = torch.Generator().manual_seed(0)
    x, y = (torch.randn(3, 4, dtype=torch.float64, generator=generator) for _ in range(2))
    tensors, schema = nested_io.flatten(((x, y), {}))
    exported = export_module(Detached(), tensors, schema, training=True)
    assert "StopGradient" in harness.op_types(exported.model)
    graphs = build_gradient_graphs(exported.model, list(exported.input_names))
    cotangent = torch.randn(3, 4, dtype=torch.float64, generator=generator)
    outputs, grads = harness.run_gradient_graphs(graphs, {"input_0": x.numpy(), "input_1": y.numpy()},
                                                 [cotangent.numpy()])
    leaves = [x.clone().requires_grad_(), y.clone().requires_grad_()]
    out = Detached()(*leaves)
    expected = torch.autograd.grad(out, leaves, cotangent)
    torch.testing.assert_close(torch.from_numpy(outputs[0]), out.detach())
    for name, want in zip(exported.input_names, expected):
        torch.testing.assert_close(torch.from_numpy(grads[name]), want, msg=lambda m, n=name: f"d/d{n}: {m}")
