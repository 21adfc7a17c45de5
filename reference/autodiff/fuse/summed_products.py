"""Products summed into one gradient accumulate in one Gemm chain: ``Sum(x₁ @ w₁, x₂ @ w₂, ...)``
(a value read by several Linear layers, as attention's query, key and value read the normed
input) becomes ``Gemm(x₂, w₂, C=Gemm(x₁, w₁))``..., each product adding into the last one's result,
instead of the products each writing theirs and a Sum reading them all again.

Only the Sums the gradient builder marks as accumulations (``SAME_SHAPE_SUM``: every input has
the output's shape, so rows line up without broadcasting) and only products nothing else reads,
with a 2-D ``w`` of known width and ``x`` not transposed. Rows of rank > 2 are flattened and the
result reshaped back (views). Another order of additions: equally accurate, not bitwise the same,
so the builder rewrites before the memory optimizer plans.
"""
from __future__ import annotations

import onnx
from onnx import helper

from reference.autodiff.fuse.graph import (
    MIN_OPSET_TO_FLATTEN, SAME_SHAPE_SUM, GraphFacts, as_rows, fold_each, linear_product, onnx_opset,
    unflattened,
)
from reference.autodiff.fuse.registry import PRODUCTS, rewrite


@rewrite("summed_products", needs=[{"Sum"}, PRODUCTS])
def accumulate_products_in_gemm(model: onnx.ModelProto) -> onnx.ModelProto:
    return fold_each(model, _folded) if onnx_opset(model) >= MIN_OPSET_TO_FLATTEN else model


def _folded(facts: GraphFacts, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if node.op_type != "Sum" or node.domain or node.doc_string != SAME_SHAPE_SUM:
        return None
    products, others = [], []
    for name in node.input:
        product = facts.producers.get(name)
        linear = linear_product(facts, product) if product is not None and facts.only_reader(name, node) else None
        if linear is None:
            others.append(name)
        else:
            products.append((product, linear))
    shapes = {(facts.rank(product.input[0]), linear["n"]) for product, linear in products}
    if len(products) < 2 or len(shapes) != 1:
        return None
    ((rank, width),) = shapes
    out = node.output[0]
    prefix = f"{out}/summed_products"
    summed = out if not others else f"{prefix}/sum"
    nodes, total = [], None
    for k, (product, linear) in enumerate(products):
        flattened, rows = as_rows(product.input[0], rank, f"{prefix}/rows_{k}")
        last = k == len(products) - 1
        result = summed if last and rank <= 2 else f"{prefix}/partial_{k}"
        nodes += flattened + [helper.make_node("Gemm", [rows, product.input[1], *([total] if total else [])], [result],
                                               name=product.name, alpha=linear["alpha"], transB=linear["trans_b"])]
        total = result
    if rank > 2:
        nodes += unflattened(total, products[0][0].input[0], width, summed, prefix)
    if others:
        nodes.append(helper.make_node("Sum", [*others, summed], [out], name=node.name))
    return nodes
