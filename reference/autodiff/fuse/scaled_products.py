"""A scalar factor rides in a product's alpha instead of a kernel of its own: ``Mul(x, c)`` or
``Div(x, c)`` that only products read (the attention gradient's division by √d before both of its
products), or that scales a product's result nothing else reads, becomes the product's alpha.

Only powers of two are folded: scaling by one is exact before the sum, after it or inside it
(barring under- and overflow), so the numbers stay those of the separate kernel. A MatMul taking a
scale becomes Gemm (2-D operands) or com.microsoft FusedMatMul (float or double, ranks >= 2).
"""
from __future__ import annotations

import math

import onnx
from onnx import helper

from reference.autodiff.fuse.graph import (
    MICROSOFT, PRODUCT_TYPES, GraphFacts, attribute, copied, exact_in_float32, replace_nodes, set_attributes,
)
from reference.autodiff.fuse.registry import PRODUCTS, rewrite


@rewrite("scaled_products", needs=[{"Mul", "Div"}, PRODUCTS])
def fold_scales_into_products(model: onnx.ModelProto) -> onnx.ModelProto:
    model = copied(model)
    facts = GraphFacts(model, types=True)
    scales: dict[int, float] = {}  # id(product) -> factor folded into its alpha
    renamed: dict[str, str] = {}  # scaled value -> what its readers read instead
    for node in model.graph.node:
        scaled = _scaled(facts, node)
        if scaled is None:
            continue
        value, factor = scaled
        readers = facts.readers.get(node.output[0], [])
        products = [facts.producers.get(value)] if facts.only_reader(value, node) else []
        if products and _product(facts, products[0]):
            scales[id(products[0])] = scales.get(id(products[0]), 1.0) * factor  # the product writes the result
            products[0].output[0] = node.output[0]
            node.op_type = ""  # dropped below
        elif readers and node.output[0] not in facts.outputs and all(
                _product(facts, r) and list(r.input).count(node.output[0]) == 1 and node.output[0] in r.input[:2]
                for r in readers):
            for reader in readers:
                scales[id(reader)] = scales.get(id(reader), 1.0) * factor
            renamed[node.output[0]] = value
            node.op_type = ""
    nodes = []
    for node in model.graph.node:
        if not node.op_type:
            continue
        node.input[:] = [renamed.get(name, name) if id(node) in scales else name for name in node.input]
        nodes.append(_with_alpha(facts, node, scales[id(node)]) if id(node) in scales else node)
    return replace_nodes(model, nodes)


def _scaled(facts: GraphFacts, node: onnx.NodeProto) -> tuple[str, float] | None:
    """(x, s) when ``node`` computes x·s for a power of two s without changing x's shape."""
    if node.domain or node.op_type not in ("Mul", "Div"):
        return None
    x, c = node.input
    if node.op_type == "Mul" and facts.scalar(x) is not None:
        x, c = c, x
    value = facts.scalar(c)
    if value is None or value == 0 or not math.isfinite(value):
        return None
    factor = value if node.op_type == "Mul" else 1 / value
    mantissa, _ = math.frexp(factor)
    rank = facts.rank(x)
    if abs(mantissa) != 0.5 or not exact_in_float32(factor) or rank is None or facts.rank(node.output[0]) != rank:
        return None
    return x, factor


def _product(facts: GraphFacts, node: onnx.NodeProto | None) -> bool:
    """Whether ``node`` is a product that can take an alpha."""
    if node is None:
        return False
    if node.op_type == "Gemm" and not node.domain:
        return len(node.input) < 3  # alpha does not scale a C added to the product
    if node.op_type == "FusedMatMul" and node.domain == MICROSOFT:
        return True
    ranks = [facts.rank(name) for name in node.input]
    return (node.op_type == "MatMul" and not node.domain and None not in ranks and min(ranks) >= 2
            and facts.elem_type(node.output[0]) in PRODUCT_TYPES)


def _with_alpha(facts: GraphFacts, node: onnx.NodeProto, factor: float) -> onnx.NodeProto:
    if node.op_type != "MatMul":
        set_attributes(node, alpha=attribute(node, "alpha", 1.0) * factor)
        return node
    if [facts.rank(name) for name in node.input] == [2, 2]:
        return helper.make_node("Gemm", list(node.input), list(node.output), name=node.name, alpha=factor)
    return helper.make_node("FusedMatMul", list(node.input), list(node.output), name=node.name, domain=MICROSOFT,
                            alpha=factor)
