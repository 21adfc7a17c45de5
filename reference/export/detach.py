"""``tensor.detach()`` kept in the graph as ``reference.StopGradient``.

torch's exporter erases ``aten::detach`` (ONNX has no notion of gradients), so the gradient
builder would differentiate through it: a module adding an EMA of ``x.detach()`` to ``x`` would
get a wrong input gradient, silently. We export it as ``StopGradient`` in our own domain, defined
in the model as a local function whose body is ``Identity`` (onnxruntime inlines it: same values),
and the autodiff stage registers it as non-differentiable.
"""
from __future__ import annotations

import onnx
from onnx import helper

DOMAIN = "reference"
OP = "StopGradient"


def detach(g, x):
    out = g.op(f"{DOMAIN}::{OP}", x)
    out.setType(x.type())  # the exporter's shape inference knows nothing of our op
    return out


def define_stop_gradient(model: onnx.ModelProto) -> None:
    """Add the function's definition (and its domain) where the graph uses it."""
    if not any(node.op_type == OP and node.domain == DOMAIN for node in model.graph.node):
        return
    if not any(entry.domain == DOMAIN for entry in model.opset_import):
        model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    onnx_opset = next(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))
    model.functions.append(helper.make_function(
        DOMAIN, OP, ["x"], ["y"], [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_opsetid("", onnx_opset)]))
