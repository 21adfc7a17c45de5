"""float16 and bfloat16 on the CPU computed in float32 between casts, as eager's CPU kernels compute them.

torch's CPU kernels widen a half-precision operand to float32, compute (products accumulate in
float32) and round the result to its half type once per op; a value that overflows the type is inf
from then on (GradScaler's skipped steps depend on it). onnxruntime's CPU provider has bfloat16
kernels for casts and a few others only ("Could not find an implementation for MatMul(13)"), and
for float16 ops it lacks it inserts casts to float32 of its own, then drops the float32 -> float16 ->
float32 round trips between them (onnxruntime 1.31.1: ``Mul`` of float16 1e6 by itself, cast to
float32, gave 1e12 at every optimization level, where eager gives inf). So every node reading a
half value reads it cast to float32 here, and each half output is the float32 result cast back:
explicit round trips, which onnxruntime keeps. A half -> float32 -> half round trip is exact, so
nodes that only move values (reshapes, transposes, gathers) give the very same bits. Casts
themselves are left as they are. Graphs without a half-precision value are returned unread.
"""
from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from reference.runtime.kernel_forms.nodes import rewrite_nodes, tensor_types

_HALVES, _FLOAT = (TensorProto.FLOAT16, TensorProto.BFLOAT16), TensorProto.FLOAT
_KEPT = {"Cast", "CastLike"}


def _mentions(model: onnx.ModelProto, halves: tuple[int, ...]) -> bool:
    graph = model.graph
    values = [*graph.input, *graph.output, *graph.value_info]
    return (any(v.type.tensor_type.elem_type in halves for v in values)
            or any(t.data_type in halves for t in graph.initializer)
            or any(node.op_type == "Cast" and any(a.name == "to" and a.i in halves for a in node.attribute)
                   for node in graph.node))


def bfloat16_in_float32(model: onnx.ModelProto) -> onnx.ModelProto:
    """The form for CUDA graphs, bfloat16 only: onnxruntime's CUDA provider (1.31.1, on an H200) has
    no bfloat16 kernel for comparisons and reductions (``Greater``, ``Less``, ``ReduceMax``: "Provider
    type ... is not set"), and ONNX's own schemas of ``Einsum`` and ``NegativeLogLikelihoodLoss`` admit
    no bfloat16 (the graph is invalid). torch's CUDA kernels compute bfloat16 in float32 too ("opmath")
    and round once per op, so the same form keeps eager's numbers; float16 keeps the provider's kernels."""
    return half_in_float32(model, (TensorProto.BFLOAT16,))


def half_in_float32(model: onnx.ModelProto, halves: tuple[int, ...] = _HALVES) -> onnx.ModelProto:
    if not _mentions(model, halves):
        return model
    types = {name: t.elem_type for name, t in tensor_types(model).items()}
    types.update({t.name: t.data_type for t in model.graph.initializer})

    def half(name: str) -> int | None:
        return types.get(name) if name and types.get(name) in halves else None

    cast_once: dict[tuple[int, str], str] = {}  # per graph, each half value's float32 copy

    def widened(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        if node.op_type in _KEPT or not any(half(name) for name in node.input):
            return None
        casts, inputs, outputs, narrowed = [], [], [], []
        for name in node.input:
            if half(name):
                if (id(graph), name) not in cast_once:  # at its first reader, after its producer
                    cast_once[id(graph), name] = f"{name}__as_float32"
                    casts.append(helper.make_node("Cast", [name], [cast_once[id(graph), name]], to=_FLOAT))
                name = cast_once[id(graph), name]
            inputs.append(name)
        for name in node.output:
            if half(name):
                wide = f"{name}__in_float32"
                narrowed.append(helper.make_node("Cast", [wide], [name], to=half(name)))
                name = wide
            outputs.append(name)
        computed = onnx.NodeProto()
        computed.CopyFrom(node)
        del computed.input[:], computed.output[:]
        computed.input.extend(inputs)
        computed.output.extend(outputs)
        return [*casts, computed, *narrowed]

    return rewrite_nodes(model, widened)
