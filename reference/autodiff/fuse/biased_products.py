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

import onnx
from onnx import helper

from reference.autodiff.fuse.graph import (
    MIN_OPSET_TO_FLATTEN, GraphFacts, as_rows, fold_each, linear_product, onnx_opset, unflattened,
)
from reference.autodiff.fuse.registry import PRODUCTS, rewrite


@rewrite("biased_products", needs=[{"Add"}, PRODUCTS])
def fold_biases_into_products(model: onnx.ModelProto) -> onnx.ModelProto:
    return fold_each(model, _folded) if onnx_opset(model) >= MIN_OPSET_TO_FLATTEN else model


def _folded(facts: GraphFacts, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if node.op_type != "Add" or node.domain:
        return None
    stashed = node.output[0] in facts.outputs
    for product_out, bias in (node.input, node.input[::-1]):
        product = facts.producers.get(product_out)
        flags = linear_product(facts, product) if product is not None and facts.only_reader(product_out, node) else None
        if flags is not None and _is_bias(facts, bias, flags["n"]) and not (
                stashed and facts.rank(product.input[0]) > 2):
            return _gemm(product, bias, node.output[0], facts.rank(product.input[0]), **flags)
    return None


def _is_bias(facts: GraphFacts, name: str, n: int) -> bool:
    return facts.dims(name) == (n,)


def _gemm(product: onnx.NodeProto, bias: str, output: str, rank: int, alpha: float, trans_b: int, n: int
          ) -> list[onnx.NodeProto]:
    x, w = product.input
    prefix = f"{output}/biased_product"
    nodes, rows = as_rows(x, rank, f"{prefix}/rows")
    result = output if rank <= 2 else f"{prefix}/result"
    nodes.append(helper.make_node("Gemm", [rows, w, bias], [result], name=product.name, alpha=alpha, transB=trans_b))
    return nodes + (unflattened(result, x, n, output, prefix) if rank > 2 else [])
