"""A product computes its result transposed instead of a Transpose node rewriting it: since
(op(A)·op(B))ᵀ = op(B)ᵀ·op(A)ᵀ, ``Transpose(product)`` whose perm swaps the last two axes is the
product of the swapped operands with flipped transA/transB, and nothing is copied. The weight
gradient of a Linear layer (``(xᵀ·dy)ᵀ``: Gemm then Transpose) is the common case.

A perm that also moves other axes keeps a Transpose, of the swapped product: taken only where it
then keeps the last axis in place, a contiguous copy instead of a strided one (the key gradient of
attention, ``[b, h, d, s] -> [b, s, h, d]``, becomes ``[b, h, s, d] -> [b, s, h, d]``). Products
rewritten: Gemm without C, and MatMul/FusedMatMul of float or double operands of known rank >= 2.
"""
from __future__ import annotations

import onnx
from onnx import helper

from reference.autodiff.fuse.graph import (
    MICROSOFT, PRODUCT_TYPES, GraphFacts, attribute, fold_each,
)
from reference.autodiff.fuse.registry import PRODUCTS, rewrite


@rewrite("transposed_results", needs=[{"Transpose"}, PRODUCTS])
def fold_transposed_results(model: onnx.ModelProto) -> onnx.ModelProto:
    return fold_each(model, _folded)


def _folded(facts: GraphFacts, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if node.op_type != "Transpose" or node.domain:
        return None
    product = facts.producers.get(node.input[0])
    if product is None or not facts.only_reader(node.input[0], node):
        return None
    swapped = _swapped(facts, product)
    rank = facts.rank(node.input[0])
    if swapped is None or rank is None:
        return None
    perm = attribute(node, "perm") or list(range(rank))[::-1]
    swap = [*range(rank - 2), rank - 1, rank - 2]
    rest = [swap[axis] for axis in perm]  # the perm to apply to the swapped product
    if rest == list(range(rank)):
        swapped.output[:] = node.output
        return [swapped]
    if perm[-1] == rank - 1 or rest[-1] != rank - 1:
        return None  # the Transpose would copy no better
    swapped.output[:] = [f"{node.output[0]}_swapped_product"]
    return [swapped, helper.make_node("Transpose", swapped.output, list(node.output), name=node.name, perm=rest)]


def _swapped(facts: GraphFacts, product: onnx.NodeProto) -> onnx.NodeProto | None:
    """The product of the swapped operands computing ``product``'s result transposed, or None."""
    if product.op_type == "Gemm" and not product.domain and (len(product.input) == 2 or not product.input[2]):
        flags = {"transA": 1 - attribute(product, "transB", 0), "transB": 1 - attribute(product, "transA", 0)}
        return helper.make_node("Gemm", product.input[1::-1], [], name=product.name,
                                alpha=attribute(product, "alpha", 1.0), **flags)
    plain = product.op_type == "MatMul" and not product.domain
    fused = (product.op_type == "FusedMatMul" and product.domain == MICROSOFT
             and not attribute(product, "transBatchA", 0) and not attribute(product, "transBatchB", 0))
    ranks = [facts.rank(name) for name in product.input]
    if not (plain or fused) or None in ranks or min(ranks) < 2 or facts.elem_type(product.output[0]) not in PRODUCT_TYPES:
        return None
    flags = {"transA": 1 - attribute(product, "transB", 0), "transB": 1 - attribute(product, "transA", 0)}
    return helper.make_node("FusedMatMul", product.input[::-1], [], name=product.name, domain=MICROSOFT,
                            alpha=attribute(product, "alpha", 1.0), **flags)

