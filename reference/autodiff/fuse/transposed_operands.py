"""A product reads its operand transposed instead of a Transpose node writing it out: MatMul of
``Transpose(a, perm swapping the last two axes)`` becomes Gemm (both operands 2-D) or
com.microsoft FusedMatMul (batched) with transA/transB, so the operand is never copied. The
gradients of ``q @ kᵀ`` and ``p @ v`` and of Linear layers read every operand this way.

Only float and double products are rewritten (onnxruntime 1.31's CPU FusedMatMul kernels), and
only where both operands' ranks are known and at least 2 (1-D operands promote differently).
The product's sum runs over the same terms in another memory order: equally accurate, not
bitwise the same, which is why the builder rewrites before the memory optimizer plans anything.
"""
from __future__ import annotations

import onnx
from onnx import helper

from reference.autodiff.fuse.graph import (
    MICROSOFT, PRODUCT_TYPES, GraphFacts, attribute, fold_each, swaps_last_two,
)
from reference.autodiff.fuse.registry import rewrite


@rewrite("transposed_operands", needs=[{"MatMul"}])
def fold_transposed_operands(model: onnx.ModelProto) -> onnx.ModelProto:
    return fold_each(model, _folded)


def _folded(facts: GraphFacts, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    if node.op_type != "MatMul" or node.domain:
        return None
    a, b = node.input
    ranks = facts.rank(a), facts.rank(b)
    if facts.elem_type(node.output[0]) not in PRODUCT_TYPES or None in ranks or min(ranks) < 2:
        return None
    source_a, source_b = _untransposed(facts, a), _untransposed(facts, b)
    if source_a is None and source_b is None:
        return None
    flags = {"transA": int(source_a is not None), "transB": int(source_b is not None)}
    inputs = [source_a or a, source_b or b]
    if ranks == (2, 2):
        return [helper.make_node("Gemm", inputs, list(node.output), name=node.name, **flags)]
    return [helper.make_node("FusedMatMul", inputs, list(node.output), name=node.name, domain=MICROSOFT,
                             alpha=1.0, **flags)]


def _untransposed(facts: GraphFacts, name: str) -> str | None:
    """x when ``name`` is Transpose(x) swapping just the last two axes, else None."""
    producer = facts.producers.get(name)
    if producer is None or producer.op_type != "Transpose" or producer.domain:
        return None
    perm = attribute(producer, "perm")
    rank = facts.rank(producer.input[0])
    if perm is None and rank == 2:  # the default perm reverses the axes
        perm = [1, 0]
    return producer.input[0] if perm is not None and swaps_last_two(perm) else None
