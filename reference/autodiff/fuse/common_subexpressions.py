"""Nodes computing the same op of the same inputs with the same attributes become one: gradient rules
each write what they need (a Flatten of the layer input per projection, a ReduceMean of the same
value), and a deterministic kernel gives the same bits twice, so merging changes no number."""
from __future__ import annotations

import onnx

from reference.autodiff.fuse.graph import copied, replace_nodes
from reference.autodiff.fuse.registry import rewrite

# Ops whose two runs may differ: never merged.
_RANDOM = frozenset({"Dropout", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli",
                     "Multinomial"})


@rewrite("common_subexpressions")
def share_common_subexpressions(model: onnx.ModelProto) -> onnx.ModelProto:
    model = copied(model)
    outputs = {value.name for value in model.graph.output}
    seen: dict[tuple, onnx.NodeProto] = {}
    renamed: dict[str, str] = {}
    nodes = []
    for node in model.graph.node:
        node.input[:] = [renamed.get(name, name) for name in node.input]
        key = _key(node)
        earlier = seen.get(key) if key is not None else None
        if earlier is not None and not any(name in outputs for name in node.output):
            renamed.update((mine, theirs) for mine, theirs in zip(node.output, earlier.output) if mine)
            continue
        if key is not None:
            seen.setdefault(key, node)
        nodes.append(node)
    return replace_nodes(model, nodes)


def _key(node: onnx.NodeProto) -> tuple | None:
    """What makes two nodes compute the same values, or None for a node never merged."""
    subgraphs = any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)
    if subgraphs or node.op_type in _RANDOM or not node.output:
        return None
    attributes = tuple(sorted((a.name, a.SerializeToString(deterministic=True)) for a in node.attribute))
    return node.domain, node.op_type, tuple(node.input), len(node.output), attributes
