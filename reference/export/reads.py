"""What an ONNX node reads: its inputs plus the outer-scope values its subgraphs (If/Loop/Scan
bodies) capture. Cutting a graph, staging a backward or finding active values all need the
captured ones too, or a control-flow node would look independent of what its body reads."""
from __future__ import annotations

import onnx


def reads(node: onnx.NodeProto) -> list[str]:
    """Names in first-read order, without repeats."""
    names = [name for name in node.input if name]
    for attribute in node.attribute:
        if attribute.HasField("g"):
            names += _free_names(attribute.g)
        elif attribute.graphs:
            for graph in attribute.graphs:
                names += _free_names(graph)
    return list(dict.fromkeys(names)) if len(names) > 1 else names  # called for every node, often


def _free_names(graph: onnx.GraphProto) -> list[str]:
    defined = {value.name for value in graph.input} | {tensor.name for tensor in graph.initializer}
    free = []
    for node in graph.node:
        free += [name for name in reads(node) if name not in defined]
        defined.update(node.output)
    return free + [value.name for value in graph.output if value.name not in defined]
