"""A Linear layer's bias rides in the product: ``Add(MatMul(x, w), b)`` (or the FusedMatMul that
``transposed_operands`` made of ``x @ wᵀ``) becomes one Gemm with ``b`` as its C, the way torch's
addmm computes it, instead of a product and a pass over its whole result. Operands of rank > 2 are
flattened to the 2-D rows Gemm takes and the result reshaped back (both views, no copies).

Only a product nothing else reads (its unbiased result is no graph output), with a 2-D ``w``, a
1-D ``b`` as long as the result's last axis, float or double, and ``x`` not transposed. A result of
rank > 2 that is itself a graph output (a value the forward graph stashes for backward) stays as
it is: onnxruntime copies a Reshape into a graph output, which costs what the Add did. The bias is
added inside the sum instead of after it: equally accurate, not bitwise the same, so the builder
rewrites before the memory optimizer plans (every recompute level runs this graph).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from reference.autodiff.fuse.graph import MICROSOFT, PRODUCT_TYPES, GraphFacts, attribute, fold_each
from reference.autodiff.fuse.registry import rewrite

_MIN_OPSET = 15  # Shape's start/end


@rewrite("biased_products")
def fold_biases_into_products(model: onnx.ModelProto) -> onnx.ModelProto:
    opset = next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), 0)
    return fold_each(model, _folded) if opset >= _MIN_OPSET else model


def _folded(facts: GraphFacts, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if node.op_type != "Add" or node.domain:
        return None
    stashed = node.output[0] in facts.outputs
    for product_out, bias in (node.input, node.input[::-1]):
        product = facts.producers.get(product_out)
        flags = _linear(facts, product) if product is not None and facts.only_reader(product_out, node) else None
        if flags is not None and _is_bias(facts, bias, flags["n"]) and not (
                stashed and facts.rank(product.input[0]) > 2):
            return _gemm(product, bias, node.output[0], facts.rank(product.input[0]), **flags)
    return None


def _linear(facts: GraphFacts, product: onnx.NodeProto) -> dict | None:
    """alpha, transB and the output width of ``x @ w`` (or ``x @ wᵀ``) with a 2-D ``w``, else None."""
    if product.op_type == "MatMul" and not product.domain:
        alpha, trans_b = 1.0, 0
    elif product.op_type == "FusedMatMul" and product.domain == MICROSOFT and not any(
            attribute(product, name, 0) for name in ("transA", "transBatchA", "transBatchB")):
        alpha, trans_b = attribute(product, "alpha", 1.0), attribute(product, "transB", 0)
    else:
        return None
    x, w = product.input
    dims = facts.dims(w)
    if (facts.elem_type(product.output[0]) not in PRODUCT_TYPES or (facts.rank(x) or 0) < 2 or dims is None
            or len(dims) != 2 or dims[1 - trans_b] is None):
        return None
    return {"alpha": alpha, "trans_b": trans_b, "n": dims[1 - trans_b]}


def _is_bias(facts: GraphFacts, name: str, n: int) -> bool:
    return facts.dims(name) == (n,)


def _gemm(product: onnx.NodeProto, bias: str, output: str, rank: int, alpha: float, trans_b: int, n: int
          ) -> list[onnx.NodeProto]:
    x, w = product.input
    if rank == 2:
        return [helper.make_node("Gemm", [x, w, bias], [output], name=product.name, alpha=alpha, transB=trans_b)]
    rows, result, leading, width, shape = (f"{output}/biased_product/{part}"
                                           for part in ("rows", "result", "leading", "width", "shape"))
    return [
        helper.make_node("Flatten", [x], [rows], name=f"{product.name}/rows", axis=-1),
        helper.make_node("Gemm", [rows, w, bias], [result], name=product.name, alpha=alpha, transB=trans_b),
        helper.make_node("Shape", [x], [leading], name=f"{product.name}/leading", end=-1),
        helper.make_node("Constant", [], [width], name=f"{product.name}/width",
                         value=numpy_helper.from_array(np.array([n], dtype=np.int64))),
        helper.make_node("Concat", [leading, width], [shape], name=f"{product.name}/shape", axis=0),
        helper.make_node("Reshape", [result, shape], [output], name=f"{product.name}/unflatten"),
    ]
