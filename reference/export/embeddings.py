"""What the exporter drops of an ``nn.Embedding``, kept for the Gather gradient rule.

The exporter turns an embedding into a plain Gather and drops ``padding_idx`` (whose row torch
never gives a gradient) and ``scale_grad_by_freq`` (torch divides each row's gradient by how often
the batch looks it up; the exporter refuses it in training mode, our symbolic below exports the
plain lookup). We record, per Gather an embedding's weight feeds, both in the model's metadata
(``EMBEDDINGS_KEY``, JSON {node name: {"padding_idx": int | None, "scale_grad_by_freq": bool}}).
"""
from __future__ import annotations

import dataclasses
import json

import onnx
import torch

EMBEDDINGS_KEY = "reference.embeddings"


@dataclasses.dataclass(frozen=True)
class EmbeddingOptions:
    padding_idx: int | None = None
    scale_grad_by_freq: bool = False


def record_embeddings(model: onnx.ModelProto, module: torch.nn.Module, prefix: str = "module.") -> None:
    """A Gather reading an embedding's weight, as the graph input ``prefix + <its key in
    named_parameters()>`` (tied weights are found by identity), is that embedding's lookup."""
    keys = {id(p): prefix + key for key, p in module.named_parameters()}
    options = {keys[id(sub.weight)]: EmbeddingOptions(sub.padding_idx, sub.scale_grad_by_freq)
               for sub in module.modules() if isinstance(sub, torch.nn.Embedding) and id(sub.weight) in keys}
    found = {node.name: dataclasses.asdict(options[node.input[0]]) for node in model.graph.node
             if node.op_type == "Gather" and node.input[0] in options and options[node.input[0]] != EmbeddingOptions()}
    if found:
        model.metadata_props.append(onnx.StringStringEntryProto(key=EMBEDDINGS_KEY, value=json.dumps(found)))


def embedding_options(model: onnx.ModelProto, node_name: str) -> EmbeddingOptions:
    entry = next((e.value for e in model.metadata_props if e.key == EMBEDDINGS_KEY), None)
    recorded = None if entry is None else json.loads(entry).get(node_name)
    return EmbeddingOptions(**recorded) if recorded else EmbeddingOptions()


def embedding(g, weight, indices, padding_idx, scale_grad_by_freq, sparse):
    """The lookup alone (a Gather): what it drops is recorded by :func:`record_embeddings`."""
    return g.op("Gather", weight, indices)


def embedding_bag(g, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                  include_last_offset, padding_idx):
    """Sum or mean bags of rows without the Loop torch's symbolic emits (no gradient rule is
    written for Loop): each index's bag is the count of offsets at or before it, minus one; rows
    (times their per-sample weights, zero at ``padding_idx``, a negative one counting from the last row) are scatter-added per bag in index
    order, as eager adds them, and a mean divides by the bag's non-padding count (an empty bag: 0)."""
    from torch.onnx import symbolic_helper

    try:
        from torch.onnx._internal.torchscript_exporter import _type_utils
    except ImportError:  # torch < 2.9
        from torch.onnx import _type_utils

    mode = symbolic_helper._maybe_get_const(mode, "i")
    if mode not in (0, 1) or symbolic_helper._maybe_get_const(scale_grad_by_freq, "b"):
        return symbolic_helper._onnx_unsupported("embedding_bag with mode max or scale_grad_by_freq", weight)
    padding = None if symbolic_helper._is_none(padding_idx) else symbolic_helper._maybe_get_const(padding_idx, "i")
    float_type = _type_utils.JitScalarType.from_value(weight).onnx_type()

    def ints(*values):
        return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))

    def scalar(value, dtype=torch.int64):
        return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))

    def floats(value):  # in the weight's dtype: a Cast, so no differentiable value is an operand
        return g.op("Cast", value, to_i=float_type)

    rows = g.op("Gather", weight, indices)
    if not symbolic_helper._is_none(per_sample_weights):
        rows = g.op("Mul", rows, g.op("Unsqueeze", per_sample_weights, ints(-1)))
    count = g.op("Shape", indices)
    if padding is not None:  # a negative one counts from the end, as ATen's does
        padding = scalar(padding) if padding >= 0 else g.op(
            "Add", scalar(padding), g.op("Gather", g.op("Shape", weight), scalar(0), axis_i=0))
        kept = g.op("Not", g.op("Equal", indices, padding))
        rows = g.op("Where", g.op("Unsqueeze", kept, ints(-1)), rows, floats(scalar(0)))
    else:
        kept = g.op("ConstantOfShape", count, value_t=torch.tensor([1], dtype=torch.bool))
    positions = g.op("Range", scalar(0), g.op("Squeeze", count, ints(0)), scalar(1))
    started = g.op("GreaterOrEqual", g.op("Unsqueeze", positions, ints(1)), g.op("Unsqueeze", offsets, ints(0)))
    bag = g.op("Sub", g.op("ReduceSum", g.op("Cast", started, to_i=7), ints(1), keepdims_i=1), ints(1))
    bags = g.op("Shape", offsets)
    if symbolic_helper._maybe_get_const(include_last_offset, "b"):
        bags = g.op("Sub", bags, ints(1))
    width = g.op("Slice", g.op("Shape", weight), ints(1), ints(2))
    out = g.op("ScatterND", floats(g.op("ConstantOfShape", g.op("Concat", bags, width, axis_i=0))), bag, rows,
               reduction_s="add")
    if mode == 1:
        sizes = g.op("ScatterND", floats(g.op("ConstantOfShape", bags)), bag, floats(kept), reduction_s="add")
        out = g.op("Div", out, g.op("Unsqueeze", g.op("Max", sizes, floats(scalar(1))), ints(-1)))
    return out, None, None, None
