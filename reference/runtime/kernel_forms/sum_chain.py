"""The variadic ``Sum`` as a chain of ``Add``: onnxruntime's CUDA Sum fails on empty inputs ("CUDA
error cudaErrorInvalidValue: invalid argument", 1.31.1: the gradient accumulation of an op over an
empty tensor), its Add does not. ``Sum(a, b, c)`` is defined as ``(a + b) + c``, in input order."""
from __future__ import annotations

import onnx
from onnx import helper

from reference.runtime.kernel_forms.nodes import rewrite_nodes


def _chained(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if node.op_type != "Sum" or node.domain not in ("", "ai.onnx"):
        return None
    if len(node.input) == 1:
        return [helper.make_node("Identity", list(node.input), list(node.output), name=node.name)]
    total, nodes = node.input[0], []
    for index, term in enumerate(node.input[1:], start=1):
        out = node.output[0] if index == len(node.input) - 1 else f"{node.output[0]}__partial{index}"
        nodes.append(helper.make_node("Add", [total, term], [out], name=f"{node.name}__add{index}"))
        total = out
    return nodes


def sum_as_adds(model: onnx.ModelProto) -> onnx.ModelProto:
    return rewrite_nodes(model, _chained)
