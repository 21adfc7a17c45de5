"""The shared gradient of ScatterElements and ScatterND (they differ only in how indices address)."""
from __future__ import annotations

from reference.autodiff.context import GradientContext
from reference.autodiff.errors import UnsupportedOpError
from reference.autodiff.grad_node import GradNode


def scatter_grads(ctx: GradientContext, node: GradNode, gather_op: str, **attrs) -> dict[int, str]:
    """updates receive dy gathered at the indices; data receives dy, minus the overwritten positions
    when reduction is "none" (for "add" the data flows through unchanged)."""
    reduction = node.attr("reduction")
    if reduction not in ("none", "add"):
        raise UnsupportedOpError(f"{node.op_type}(reduction={reduction})", node.name, [f"{node.op_type}(none, add)"])
    grad, grads = node.grad(), {}
    indices = ctx.forward(node.input(1)) if node.wants(0) or node.wants(2) else None
    if node.wants(0):
        if reduction == "add":
            grads[0] = grad
        else:
            grads[0] = ctx.op(node.op_type, grad, indices, ctx.zeros_like(node.input(2)), **attrs)
    if node.wants(2):
        grads[2] = ctx.op(gather_op, grad, indices, **attrs)
    return grads
