"""``Sigmoid`` as ``exp(-|x|)`` over ``1 + exp(-|x|)`` (numerator 1 where x >= 0): onnxruntime's CPU
kernel is accurate only in absolute terms (MLAS' rational logistic): at x = -9 it is 2.7e-4 off
relatively, at -12 5.6e-3, at -15 17% (1.31.1 and 1.19.2), so a gradient through a saturated sigmoid
(y (1 - y), or SiLU's) comes out wrong though every output looks close. Built from ``Exp``, the same
values are within ~7 ulp everywhere (onnxruntime's Exp), as torch's sigmoid is. No ``Sigmoid`` node
is left for a kernel to approximate; the gradient rule still sees the ``Sigmoid`` it differentiates
(the rewrite runs on the graphs sessions run, after autodiff)."""
from __future__ import annotations

import onnx
from onnx import helper

from reference.runtime.kernel_forms.nodes import float_constant, rewrite_nodes


def _composed(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if node.op_type != "Sigmoid" or node.domain not in ("", "ai.onnx"):
        return None
    (x,), (y,) = node.input, node.output
    name = lambda part: f"{y}__sigmoid_{part}"  # noqa: E731 - one naming rule for every value made here
    return [
        helper.make_node("Abs", [x], [name("abs")]),
        helper.make_node("Neg", [name("abs")], [name("neg")]),
        helper.make_node("Exp", [name("neg")], [name("e")]),          # exp(-|x|) in (0, 1]: never overflows
        helper.make_node("CastLike", [float_constant(graph, "sigmoid__zero", 0.0), x], [name("zero")]),
        helper.make_node("CastLike", [float_constant(graph, "sigmoid__one", 1.0), x], [name("one")]),
        helper.make_node("Add", [name("one"), name("e")], [name("denominator")]),
        helper.make_node("Less", [x, name("zero")], [name("negative")]),
        helper.make_node("Where", [name("negative"), name("e"), name("one")], [name("numerator")]),
        helper.make_node("Div", [name("numerator"), name("denominator")], [y]),
    ]


def exact_sigmoid(model: onnx.ModelProto) -> onnx.ModelProto:
    return rewrite_nodes(model, _composed)
