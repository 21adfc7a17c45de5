"""Reductions that drop axes, rewritten to keep them and squeeze them after: same numbers, and a
form onnxruntime's CUDA reductions accept for empty inputs.

onnxruntime's CUDA ``Reduce*`` kernels refuse ``keepdims=0`` over an axis of size 0 ("Can't reduce
on dim with value of 0 if 'keepdims' is false", 1.31.1, found by the first GPU run: the gradient of
a broadcast over an empty batch), where ONNX defines the result (the reduction's identity) and the
CPU kernels give it. ``ReduceX(keepdims=0)`` equals ``Squeeze(ReduceX(keepdims=1), axes)``, and with
no axes (every axis reduced) ``Reshape(ReduceX(keepdims=1), [])``: only the output's shape is
rearranged, so every number stays bitwise what it was.
"""
from __future__ import annotations

import onnx
from onnx import helper, numpy_helper
import numpy as np

REDUCTIONS = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}


def _attribute(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)


def _drops_axes(node: onnx.NodeProto) -> bool:
    # noop_with_empty_axes with run-time axes: an empty axes list reduces nothing, and Squeeze with
    # an empty list would drop every size-1 axis instead; left alone (the reference keeps dims there)
    return (node.op_type in REDUCTIONS and node.domain in ("", "ai.onnx") and _attribute(node, "keepdims", 1) == 0
            and not _attribute(node, "noop_with_empty_axes", 0))


def keep_reduced_axes(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` in which no reduction drops axes (subgraphs of control-flow ops too)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    _rewrite(model.graph)
    return model


def _rewrite(graph: onnx.GraphProto) -> None:
    nodes, scalar_shape = [], None
    for node in graph.node:
        for attribute in node.attribute:
            for subgraph in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                _rewrite(subgraph)
        if not _drops_axes(node):
            nodes.append(node)
            continue
        kept = f"{node.output[0]}__kept_axes"
        reduced = onnx.NodeProto.FromString(node.SerializeToString())
        for attribute in reduced.attribute:
            if attribute.name == "keepdims":
                attribute.i = 1
        final = reduced.output[0]
        reduced.output[0] = kept
        axes = reduced.input[1] if len(reduced.input) > 1 and reduced.input[1] else None
        listed = _attribute(reduced, "axes", None)  # opsets before axes became an input
        if listed is not None:
            axes = f"{node.output[0]}__axes"
            graph.initializer.append(numpy_helper.from_array(np.array(listed, dtype=np.int64), axes))
        if axes is not None:
            nodes += [reduced, helper.make_node("Squeeze", [kept, axes], [final], name=f"{node.name}__squeeze")]
        else:
            if scalar_shape is None:
                scalar_shape = f"{graph.name}__scalar_shape"
                graph.initializer.append(numpy_helper.from_array(np.zeros(0, dtype=np.int64), scalar_shape))
            nodes += [reduced, helper.make_node("Reshape", [kept, scalar_shape], [final], name=f"{node.name}__scalar")]
    del graph.node[:]
    graph.node.extend(nodes)
