"""Reductions that drop axes, rewritten to keep them and squeeze them after.

onnxruntime's CUDA ``Reduce*`` kernels refuse ``keepdims=0`` over an axis of size 0 ("Can't reduce
on dim with value of 0 if 'keepdims' is false", 1.31.1: the gradient of a broadcast over an empty
batch), where ONNX defines the result (the reduction's identity) and the CPU kernels give it.
``ReduceX(keepdims=0)`` equals ``Squeeze(ReduceX(keepdims=1), axes)``, and with no axes (every axis
reduced) ``Reshape(ReduceX(keepdims=1), [])``: only the output's shape is rearranged.
"""
from __future__ import annotations

import onnx
from onnx import helper

from reference.runtime.kernel_forms.nodes import int64_constant, rewrite_nodes

REDUCTIONS = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}


def _attribute(node: onnx.NodeProto, name: str, default):
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)


def _drops_axes(node: onnx.NodeProto) -> bool:
    # noop_with_empty_axes with run-time axes: an empty axes list reduces nothing, and Squeeze with
    # an empty list would drop every size-1 axis instead; left alone (the reference keeps dims there)
    return (node.op_type in REDUCTIONS and node.domain in ("", "ai.onnx") and _attribute(node, "keepdims", 1) == 0
            and not _attribute(node, "noop_with_empty_axes", 0))


def _kept(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if not _drops_axes(node):
        return None
    final, kept = node.output[0], f"{node.output[0]}__kept_axes"
    reduced = onnx.NodeProto.FromString(node.SerializeToString())
    next(a for a in reduced.attribute if a.name == "keepdims").i = 1
    reduced.output[0] = kept
    axes = reduced.input[1] if len(reduced.input) > 1 and reduced.input[1] else None
    listed = _attribute(reduced, "axes", None)  # opsets before axes became an input
    if listed is not None:
        axes = int64_constant(graph, f"{final}__axes", listed)
    if axes is None:
        scalar = int64_constant(graph, f"{final}__scalar_shape", [])
        return [reduced, helper.make_node("Reshape", [kept, scalar], [final], name=f"{node.name}__scalar")]
    return [reduced, helper.make_node("Squeeze", [kept, axes], [final], name=f"{node.name}__squeeze")]


def keep_reduced_axes(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` in which no reduction drops axes (subgraphs of control-flow ops too)."""
    return rewrite_nodes(model, _kept)
