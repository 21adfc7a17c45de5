"""float64 ``Softmax``, ``LogSoftmax``, ``LayerNormalization`` and ``SoftmaxCrossEntropyLoss`` as the
ops they are defined by.

onnxruntime's CUDA kernels of these four compute float64 inputs at float32 accuracy (1.31.1: softmax
0.13771197694523252 where float64 eager gives 0.13771197146249534, on an H200; layer_norm 0.99999409914
where eager gives 0.99999405672, on an H100), ~1e6 times the float64 oracle's bound, while its float64
Exp, Log, Sqrt and reductions are float64; its CPU LayerNormalization keeps float64 statistics in
float32 (it implements only ``stash_type`` float: 1e-13 relatively, 21x the bound). So, only for
float64, LayerNormalization everywhere (:func:`double_layer_norm_decomposed`) and the softmax family
on CUDA (:func:`double_softmax_decomposed`; the CPU kernels are float64-accurate)::

    Softmax(x)     = e / ReduceSum(e),  e = Exp(x - ReduceMax(x))       over the one axis
    LogSoftmax(x)  = (x - m) - Log(ReduceSum(Exp(x - m)))
    LayerNorm(x)   = (x - mean) · 1/Sqrt(mean((x - mean)²) + eps) · scale + bias   over axis..rank-1
    SoftmaxCrossEntropyLoss = NegativeLogLikelihoodLoss(LogSoftmax over axis 1, same attributes)

as eager computes them. A LayerNormalization whose Mean/InvStdDev outputs are used, a node whose
rank shape inference cannot tell, or a model below opset 18 (reduction axes as inputs) is left alone.
"""
from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from reference.export.epsilon import written_epsilon
from reference.runtime.kernel_forms.nodes import double_constant, int64_constant, onnx_opset, rewrite_nodes, tensor_types

SOFTMAX_FAMILY = ("Softmax", "LogSoftmax", "SoftmaxCrossEntropyLoss")
DOUBLE_FORMS = (*SOFTMAX_FAMILY, "LayerNormalization")


def _attribute(node: onnx.NodeProto, name: str, default):
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)


def _rank(types: dict, name: str) -> int | None:
    value = types.get(name)
    return len(value.shape.dim) if value is not None and value.HasField("shape") else None


def _log_softmax(graph, x: str, axis: int, out: str, prefix: str, log: bool) -> list[onnx.NodeProto]:
    axes = int64_constant(graph, f"{prefix}__axes", [axis])
    v = lambda suffix: f"{prefix}__{suffix}"  # noqa: E731
    make = helper.make_node
    nodes = [make("ReduceMax", [x, axes], [v("max")], keepdims=1),
             make("Sub", [x, v("max")], [v("shifted")]),
             make("Exp", [v("shifted")], [v("exp")]),
             make("ReduceSum", [v("exp"), axes], [v("sum")], keepdims=1)]
    if log:
        return nodes + [make("Log", [v("sum")], [v("log_sum")]), make("Sub", [v("shifted"), v("log_sum")], [out])]
    return nodes + [make("Div", [v("exp"), v("sum")], [out])]


def _layer_norm(graph, node: onnx.NodeProto, rank: int) -> list[onnx.NodeProto]:
    x, scale, *rest = node.input
    out, prefix = node.output[0], f"{node.output[0]}__f64"
    start = _attribute(node, "axis", -1) % rank
    axes = int64_constant(graph, f"{prefix}__axes", list(range(start, rank)))
    epsilon = double_constant(graph, f"{prefix}__epsilon", written_epsilon(_attribute(node, "epsilon", 1e-5)))
    v = lambda suffix: f"{prefix}__{suffix}"  # noqa: E731
    make = helper.make_node
    nodes = [make("ReduceMean", [x, axes], [v("mean")], keepdims=1),
             make("Sub", [x, v("mean")], [v("centered")]),
             make("Mul", [v("centered"), v("centered")], [v("squared")]),
             make("ReduceMean", [v("squared"), axes], [v("variance")], keepdims=1),
             make("Add", [v("variance"), epsilon], [v("shifted_variance")]),
             make("Sqrt", [v("shifted_variance")], [v("std")]),
             make("Reciprocal", [v("std")], [v("inv_std")]),
             make("Mul", [v("centered"), v("inv_std")], [v("normalized")])]
    bias = rest[0] if rest and rest[0] else None
    nodes.append(make("Mul", [v("normalized"), scale], [v("scaled") if bias else out]))
    if bias:
        nodes.append(make("Add", [v("scaled"), bias], [out]))
    return nodes


def _cross_entropy(graph, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    scores, labels, *weights = node.input
    prefix = f"{node.output[0]}__f64"
    log_prob = node.output[1] if len(node.output) > 1 and node.output[1] else f"{prefix}__log_prob"
    nll = helper.make_node("NegativeLogLikelihoodLoss", [log_prob, labels, *weights], [node.output[0]],
                           name=f"{node.name}__nll")
    nll.attribute.extend(a for a in node.attribute if a.name in ("reduction", "ignore_index"))
    return _log_softmax(graph, scores, 1, log_prob, prefix, log=True) + [nll]


def _applies(node: onnx.NodeProto, types: dict, op_types: tuple[str, ...]) -> bool:
    if node.op_type not in op_types or node.domain not in ("", "ai.onnx"):
        return False
    x = types.get(node.input[0])
    if x is None or x.elem_type != TensorProto.DOUBLE or not _rank(types, node.input[0]):
        return False
    return node.op_type != "LayerNormalization" or not any(node.output[1:])


def double_layer_norm_decomposed(model: onnx.ModelProto) -> onnx.ModelProto:
    return double_normalizers_decomposed(model, ("LayerNormalization",))


def double_softmax_decomposed(model: onnx.ModelProto) -> onnx.ModelProto:
    return double_normalizers_decomposed(model, SOFTMAX_FAMILY)


def double_normalizers_decomposed(model: onnx.ModelProto, op_types: tuple[str, ...] = DOUBLE_FORMS) -> onnx.ModelProto:
    """A copy of ``model`` with its float64 nodes of ``op_types`` decomposed; ``model`` itself where it has none."""
    if onnx_opset(model) < 18 or not any(n.op_type in op_types for n in model.graph.node):
        return model
    types = tensor_types(model)
    targets = {node.output[0]: _rank(types, node.input[0]) for node in model.graph.node
               if _applies(node, types, op_types)}
    if not targets:
        return model

    def rewrite(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        if node.output[0] not in targets:
            return None
        rank = targets[node.output[0]]
        if node.op_type == "LayerNormalization":
            return _layer_norm(graph, node, rank)
        if node.op_type == "SoftmaxCrossEntropyLoss":
            return _cross_entropy(graph, node)
        axis = _attribute(node, "axis", -1) % rank
        return _log_softmax(graph, node.input[0], axis, node.output[0], f"{node.output[0]}__f64",
                            log=node.op_type == "LogSoftmax")

    return rewrite_nodes(model, rewrite)
