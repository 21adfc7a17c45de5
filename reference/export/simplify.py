"""Cheap clean-ups of the exported graph: none changes a number eager PyTorch computes.

``nn.Dropout(0.0)`` (a model configured without dropout) still exports as a training-mode
Dropout node, which makes onnxruntime draw and write a mask every step for nothing. Removing it
outright (rather than leaving an Identity) also lets recompute trace through where it stood.
"""
from __future__ import annotations

import onnx
from onnx import numpy_helper


def drop_zero_dropouts(model: onnx.ModelProto) -> None:
    """Remove Dropout nodes whose ratio is a constant 0 and whose mask nobody reads: their readers
    read the input instead (an Identity stays where the output is a graph output)."""
    graph = model.graph
    constants = _scalar_constants(graph)
    read = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    outputs = {o.name for o in graph.output}
    replaced: dict[str, str] = {}
    kept = []
    for node in graph.node:
        node.input[:] = [replaced.get(name, name) for name in node.input]
        zero = (node.op_type == "Dropout" and not node.domain and len(node.input) >= 2
                and constants.get(node.input[1]) == 0.0 and not (len(node.output) > 1 and node.output[1] in read))
        if zero and node.output[0] not in outputs:
            replaced[node.output[0]] = node.input[0]
            continue
        if zero:
            del node.input[1:]
            del node.output[1:]
            node.op_type = "Identity"
        kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)


def _scalar_constants(graph: onnx.GraphProto) -> dict[str, float]:
    found = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            found[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return {name: float(value.item()) for name, value in found.items() if value.size == 1 and value.dtype.kind == "f"}

