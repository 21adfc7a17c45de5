"""``Gelu`` given an axis of size 1 around it: onnxruntime's CUDA Gelu refuses a 0-d input ("Input 0
is expected to have 1 or more dimensions, got 0", 1.31.1), ONNX's (opset 20) does not. Elementwise,
so ``Squeeze(Gelu(Unsqueeze(x, [0])), [0])`` computes every value as ``Gelu(x)`` does, at any rank."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from reference.runtime.cuda_forms.nodes import rewrite_nodes


def _axis_zero(graph: onnx.GraphProto) -> str:
    name = f"{graph.name}__axis_zero"
    if not any(t.name == name for t in graph.initializer):
        graph.initializer.append(numpy_helper.from_array(np.array([0], dtype=np.int64), name))
    return name


def _wrapped(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if node.op_type != "Gelu" or node.domain not in ("", "ai.onnx"):
        return None
    axis, (x,), (y,) = _axis_zero(graph), node.input, node.output
    gelu = onnx.NodeProto.FromString(node.SerializeToString())
    gelu.input[0], gelu.output[0] = f"{y}__with_axis_in", f"{y}__with_axis_out"
    return [helper.make_node("Unsqueeze", [x, axis], [gelu.input[0]], name=f"{node.name}__unsqueeze"), gelu,
            helper.make_node("Squeeze", [gelu.output[0], axis], [y], name=f"{node.name}__squeeze")]


def gelu_with_an_axis(model: onnx.ModelProto) -> onnx.ModelProto:
    return rewrite_nodes(model, _wrapped)
