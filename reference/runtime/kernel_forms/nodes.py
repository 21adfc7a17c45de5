"""The walk every kernel form shares: each node of a graph (and of its subgraphs) replaced by the
nodes a rewrite returns for it, on a copy of the model."""
from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
from onnx import numpy_helper

Rewrite = Callable[[onnx.GraphProto, onnx.NodeProto], "list[onnx.NodeProto] | None"]


def rewrite_nodes(model: onnx.ModelProto, rewrite: Rewrite) -> onnx.ModelProto:
    """A copy of ``model`` where each node ``rewrite`` answers for (a list) is replaced by that list;
    ``None`` keeps the node. ``rewrite`` may add initializers to the graph it is given."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    _walk(model.graph, rewrite)
    return model


def _walk(graph: onnx.GraphProto, rewrite: Rewrite) -> None:
    nodes = []
    for node in graph.node:
        for attribute in node.attribute:
            for subgraph in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                _walk(subgraph, rewrite)
        replaced = rewrite(graph, node)
        nodes.extend([node] if replaced is None else replaced)
    del graph.node[:]
    graph.node.extend(nodes)


def int64_constant(graph: onnx.GraphProto, name: str, values) -> str:
    """``name``: an int64 initializer of ``graph`` holding ``values`` (added once)."""
    return _constant(graph, name, np.array(values, dtype=np.int64))


def float_constant(graph: onnx.GraphProto, name: str, value: float) -> str:
    """``name``: a float32 scalar initializer of ``graph`` (added once; ``CastLike`` it to the dtype at hand)."""
    return _constant(graph, name, np.array(value, dtype=np.float32))


def _constant(graph: onnx.GraphProto, name: str, array: np.ndarray) -> str:
    if not any(t.name == name for t in graph.initializer):
        graph.initializer.append(numpy_helper.from_array(array, name))
    return name


def tensor_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto.Tensor]:
    """Each value of the top-level graph with an inferred tensor type (element type, maybe a shape)."""
    graph = onnx.shape_inference.infer_shapes(model).graph
    return {v.name: v.type.tensor_type for v in [*graph.value_info, *graph.input, *graph.output]
            if v.type.HasField("tensor_type")}


def onnx_opset(model: onnx.ModelProto) -> int:
    return next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), 1)


def double_constant(graph: onnx.GraphProto, name: str, value: float) -> str:
    """``name``: a float64 scalar initializer of ``graph`` (added once)."""
    return _constant(graph, name, np.array(value, dtype=np.float64))
