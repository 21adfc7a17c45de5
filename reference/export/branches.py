"""Shape-only ``If`` nodes made differentiable: the data moves outside, only the shape branches.

With dynamic axes the exporter turns ``x.squeeze(dim)`` into ``If(size == 1, Squeeze(x), Identity(x))``:
the branches read ``x`` from the enclosing graph, which a gradient builder over one flat graph can't
follow. When every branch only rearranges one and the same outer value (Squeeze, Unsqueeze,
Reshape, Flatten, Identity), the result holds ``x``'s elements in ``x``'s order whichever branch
runs, so the node becomes ``Reshape(x, If(cond, Shape(then), Shape(else)))``: same numbers, and
the only differentiable op is a Reshape.
"""
from __future__ import annotations

import onnx
from onnx import TensorProto, helper

_MOVES = frozenset({"Squeeze", "Unsqueeze", "Reshape", "Flatten", "Identity"})


def reshape_shape_only_ifs(model: onnx.ModelProto) -> None:
    graph = model.graph
    constants = {t.name for t in graph.initializer} | {n.output[0] for n in graph.node if n.op_type == "Constant"}
    rewritten = []
    for node in graph.node:
        source = _moved_value(node, constants)
        if source is None:
            rewritten.append(node)
            continue
        output = node.output[0]
        shape = f"{output}_shape"
        for branch in _branches(node):
            _output_shape_instead(branch, f"{branch.name}_{shape}")
        node.output[0] = shape
        _forget_shape(graph, output)  # declared from the branch the trace took; now either
        rewritten += [node, helper.make_node("Reshape", [source, shape], [output], name=f"{node.name}_reshape",
                                             allowzero=1)]
    del graph.node[:]
    graph.node.extend(rewritten)


def _branches(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    return [attribute.g for attribute in node.attribute if attribute.name in ("then_branch", "else_branch")]


def _moved_value(node: onnx.NodeProto, constants: set[str]) -> str | None:
    """The one outer value both branches of ``node`` only rearrange, or None."""
    if node.op_type != "If" or node.domain or len(node.output) != 1:
        return None
    sources = {_branch_source(branch, constants) for branch in _branches(node)}
    return sources.pop() if len(sources) == 1 and None not in sources else None


def _branch_source(branch: onnx.GraphProto, constants: set[str]) -> str | None:
    if len(branch.output) != 1:
        return None
    defined, chain = set(), {}
    for node in branch.node:
        if node.op_type == "Constant":
            defined.update(node.output)
            continue
        if node.op_type not in _MOVES or node.domain:
            return None
        data, *rest = node.input
        if any(name and name not in defined and name not in constants for name in rest):
            return None
        chain[node.output[0]] = data
        defined.update(node.output)
    value = branch.output[0].name
    while value in chain:
        value = chain[value]
    return None if value in defined else value


def _output_shape_instead(branch: onnx.GraphProto, shape_name: str) -> None:
    data = branch.output[0].name
    branch.node.append(helper.make_node("Shape", [data], [shape_name], name=f"{shape_name}_node"))
    del branch.output[:]
    branch.output.append(helper.make_tensor_value_info(shape_name, TensorProto.INT64, [None]))


def _forget_shape(graph: onnx.GraphProto, name: str) -> None:
    for value in [*graph.output, *graph.value_info]:
        if value.name == name:
            value.type.tensor_type.ClearField("shape")
