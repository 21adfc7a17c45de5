"""bfloat16 on the CPU computed in float32 between casts, as eager's CPU kernels compute it.

onnxruntime's CPU provider has bfloat16 kernels for casts and a few others only ("Could not find an
implementation for MatMul(13)"), so a graph traced under ``torch.autocast("cpu", torch.bfloat16)``
cannot run as exported. torch's CPU kernels widen bfloat16 operands to float32, compute (products
accumulate in float32) and round the result to bfloat16 once; so does this form: every node reading
a bfloat16 value reads it cast to float32, and each bfloat16 output is the float32 result cast back.
A bfloat16 -> float32 -> bfloat16 round trip is exact, so nodes that only move values (reshapes,
transposes, gathers) give the very same bits. Casts themselves are left as they are (onnxruntime
has them in bfloat16). Graphs without a bfloat16 value are returned untouched, unread.
"""
from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from reference.runtime.kernel_forms.nodes import rewrite_nodes, tensor_types

_BF16, _FLOAT = TensorProto.BFLOAT16, TensorProto.FLOAT
_KEPT = {"Cast", "CastLike"}


def _mentions_bfloat16(model: onnx.ModelProto) -> bool:
    graph = model.graph
    values = [*graph.input, *graph.output, *graph.value_info]
    return (any(v.type.tensor_type.elem_type == _BF16 for v in values)
            or any(t.data_type == _BF16 for t in graph.initializer)
            or any(node.op_type == "Cast" and any(a.name == "to" and a.i == _BF16 for a in node.attribute)
                   for node in graph.node))


def bfloat16_in_float32(model: onnx.ModelProto) -> onnx.ModelProto:
    if not _mentions_bfloat16(model):
        return model
    types = tensor_types(model)
    types.update({t.name: onnx.TypeProto.Tensor(elem_type=t.data_type) for t in model.graph.initializer})

    def is_bf16(name: str) -> bool:
        return bool(name) and name in types and types[name].elem_type == _BF16

    cast_once: dict[tuple[int, str], str] = {}  # per graph, each bfloat16 value's float32 copy

    def widened(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        if node.op_type in _KEPT or not any(is_bf16(name) for name in node.input):
            return None
        casts, inputs, outputs, narrowed = [], [], [], []
        for name in node.input:
            if is_bf16(name):
                if (id(graph), name) not in cast_once:  # at its first reader, after its producer
                    cast_once[id(graph), name] = f"{name}__as_float32"
                    casts.append(helper.make_node("Cast", [name], [cast_once[id(graph), name]], to=_FLOAT))
                name = cast_once[id(graph), name]
            inputs.append(name)
        for name in node.output:
            if is_bf16(name):
                wide = f"{name}__in_float32"
                narrowed.append(helper.make_node("Cast", [wide], [name], to=_BF16))
                name = wide
            outputs.append(name)
        computed = onnx.NodeProto()
        computed.CopyFrom(node)
        del computed.input[:], computed.output[:]
        computed.input.extend(inputs)
        computed.output.extend(outputs)
        return [*casts, computed, *narrowed]

    return rewrite_nodes(model, widened)
