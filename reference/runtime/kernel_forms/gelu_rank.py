"""``Gelu`` given an axis of size 1 around it: onnxruntime's CUDA Gelu refuses a 0-d input ("Input 0
is expected to have 1 or more dimensions, got 0", 1.31.1), ONNX's (opset 20) does not. Elementwise,
so ``Squeeze(Gelu(Unsqueeze(x, [0])), [0])`` computes every value as ``Gelu(x)`` does, at any rank."""
from __future__ import annotations

import onnx
from onnx import helper

from reference.runtime.kernel_forms.nodes import int64_constant, rewrite_nodes


def _wrapped(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if node.op_type != "Gelu" or node.domain not in ("", "ai.onnx"):
        return None
    axis, (x,), (y,) = int64_constant(graph, f"{graph.name}__axis_zero", [0]), node.input, node.output
    gelu = onnx.NodeProto.FromString(node.SerializeToString())
    gelu.input[0], gelu.output[0] = f"{y}__with_axis_in", f"{y}__with_axis_out"
    return [helper.make_node("Unsqueeze", [x, axis], [gelu.input[0]], name=f"{node.name}__unsqueeze"), gelu,
            helper.make_node("Squeeze", [gelu.output[0], axis], [y], name=f"{node.name}__squeeze")]


def gelu_with_an_axis(model: onnx.ModelProto) -> onnx.ModelProto:
    return rewrite_nodes(model, _wrapped)
