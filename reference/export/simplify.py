"""Cheap clean-ups of the exported graph: none changes a number eager PyTorch computes.

``nn.Dropout(0.0)`` (a model configured without dropout) still exports as a training-mode
Dropout node, which makes onnxruntime draw and write a mask every step for nothing.
"""
from __future__ import annotations

import onnx
from onnx import numpy_helper


def drop_zero_dropouts(model: onnx.ModelProto) -> None:
    """Replace Dropout nodes whose ratio is a constant 0 and whose mask nobody reads by Identity."""
    constants = _scalar_constants(model.graph)
    read = {name for node in model.graph.node for name in node.input} | {o.name for o in model.graph.output}
    for node in model.graph.node:
        if node.op_type != "Dropout" or node.domain or len(node.input) < 2:
            continue
        mask_read = len(node.output) > 1 and node.output[1] in read
        if constants.get(node.input[1]) == 0.0 and not mask_read:
            del node.input[1:]
            del node.output[1:]
            node.op_type = "Identity"


def _scalar_constants(graph: onnx.GraphProto) -> dict[str, float]:
    found = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            found[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return {name: float(value.item()) for name, value in found.items() if value.size == 1 and value.dtype.kind == "f"}

