"""An exported graph cut at its ``reference.PythonOp`` nodes (``python_calls``) into pieces that
run in order: ONNX graphs for onnxruntime and Function calls for torch.

Each node gets a *level*: how many Python calls lie on its deepest path from the graph inputs.
Graph piece ``L`` holds the ONNX nodes of level ``L``; the calls of level ``L`` run after it and
feed level ``L + 1``. So there are as many graph pieces as the longest chain of calls plus one,
however many calls sit side by side. Nodes without inputs (constants) are copied into every
piece that reads them instead of being handed from piece to piece.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import onnx
from onnx import helper

from reference.export.python_calls import DOMAIN, OP, PythonCall
from reference.export.reads import reads


@dataclasses.dataclass(frozen=True)
class GraphPiece:
    model: onnx.ModelProto
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class CallPiece:
    call: PythonCall
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


Piece = GraphPiece | CallPiece


def is_python_call(node: onnx.NodeProto) -> bool:
    return node.op_type == OP and node.domain == DOMAIN


def split(model: onnx.ModelProto, calls: Sequence[PythonCall]) -> list[Piece]:
    """The pieces in run order; ``[]`` when the graph calls no Function (it runs whole)."""
    graph = model.graph
    if not any(is_python_call(node) for node in graph.node):
        return []
    level = {name: 0 for name in [*(v.name for v in graph.input), *(t.name for t in graph.initializer)]}
    by_level: dict[int, list[onnx.NodeProto]] = {}
    calls_by_level: dict[int, list[onnx.NodeProto]] = {}
    free = {}  # output -> node without inputs, copied where read
    for node in graph.node:
        read = reads(node)
        if not read and not is_python_call(node):
            free.update({name: node for name in node.output})
            continue
        deepest = max((level.get(name, 0) for name in read), default=0)
        if is_python_call(node):
            calls_by_level.setdefault(deepest, []).append(node)
            level.update({name: deepest + 1 for name in node.output})
        else:
            by_level.setdefault(deepest, []).append(node)
            level.update({name: deepest for name in node.output})

    steps: list[tuple[str, list[onnx.NodeProto]]] = []
    for lv in range(max([*by_level, *(k + 1 for k in calls_by_level)]) + 1):
        steps.append(("graph", by_level.get(lv, [])))
        steps += [("call", [node]) for node in calls_by_level.get(lv, [])]
    for index, (kind, nodes) in enumerate(steps):  # constants into the pieces reading them
        if kind == "graph":
            nodes[:0] = _constants_read(nodes, free)
        elif any(name in free for name in reads(nodes[0])):  # a call reading a constant: the graph piece before makes it
            before = next(nodes for kind, nodes in reversed(steps[:index]) if kind == "graph")
            before.extend(free[name] for name in reads(nodes[0]) if name in free and free[name] not in before)

    types = _known_types(model)
    final = {value.name for value in graph.output}
    initializers = {t.name for t in graph.initializer}
    step_reads = [[name for node in nodes for name in reads(node)] for _, nodes in steps]
    last_read = {name: index for index, names in enumerate(step_reads) for name in names}
    pieces: list[Piece] = []
    for index, (kind, nodes) in enumerate(steps):
        made = [name for node in nodes for name in node.output if name]
        outputs = tuple(dict.fromkeys(name for name in made if last_read.get(name, -1) > index or name in final))
        inside = set(made) | initializers
        inputs = tuple(dict.fromkeys(name for name in step_reads[index] if name not in inside))
        if kind == "call":
            pieces.append(CallPiece(calls[_call_index(nodes[0])], inputs, tuple(nodes[0].output)))
        elif nodes:
            pieces.append(GraphPiece(_piece_model(model, index, nodes, inputs, outputs, types), inputs, outputs))
    return pieces


def _constants_read(nodes: list[onnx.NodeProto], free: dict[str, onnx.NodeProto]) -> list[onnx.NodeProto]:
    wanted = {free[name].output[0]: free[name] for node in nodes for name in reads(node) if name in free}
    return list(wanted.values())


def _call_index(node: onnx.NodeProto) -> int:
    return next(attribute.i for attribute in node.attribute if attribute.name == "call")


def _known_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Value types from the export (the calls' outputs carry theirs) and shape inference."""
    inferred = onnx.shape_inference.infer_shapes(model)
    values = [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output,
              *model.graph.value_info]
    types = {value.name: value.type for value in values if value.type.tensor_type.elem_type}
    types.update({t.name: helper.make_tensor_type_proto(t.data_type, t.dims) for t in model.graph.initializer})
    return types


def _piece_model(model: onnx.ModelProto, index: int, nodes: list[onnx.NodeProto], inputs: Sequence[str],
                 outputs: Sequence[str], types: dict[str, onnx.TypeProto]) -> onnx.ModelProto:
    read = {name for node in nodes for name in reads(node)}
    graph = helper.make_graph(
        nodes, f"{model.graph.name}_piece{index}",
        [helper.make_value_info(name, types[name]) for name in inputs],
        [helper.make_value_info(name, types[name]) if name in types else onnx.ValueInfoProto(name=name)
         for name in outputs],
        initializer=[t for t in model.graph.initializer if t.name in read])
    return helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version,
                             functions=list(model.functions))
