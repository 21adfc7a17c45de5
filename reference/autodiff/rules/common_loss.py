"""What the cross-entropy family of loss gradients share: the per-sample factor, and subtracting it
at each sample's label (scattered, rather than materializing a one-hot tensor the size of scores)."""
from __future__ import annotations

import numpy as np

from reference.autodiff.context import GradientContext
from reference.autodiff.grad_node import GradNode


def loss_terms(ctx: GradientContext, node: GradNode) -> tuple[str, str]:
    """(factor, label positions) for a loss node with inputs (scores [N, C, d...], labels [N, d...],
    optional class weights [C]).

    factor is dloss spread to samples: times the class weight, 0 at ignore_index, over Σweights for
    reduction="mean" (PyTorch's normalization); it broadcasts against scores. Label positions are
    [N, 1, d...] indices along the class axis, ignored labels replaced by 0 (their factor is 0).
    """
    labels, ignore_index = ctx.forward(node.input(1)), node.attr("ignore_index")
    label_type, score_type = ctx.np_dtype(node.input(1)), ctx.elem_type(node.input(0))
    keep = weights = None
    if ignore_index is not None:
        keep = ctx.op("Not", ctx.op("Equal", labels, ctx.constant(np.array(ignore_index, label_type))))
        labels = ctx.op("Where", keep, labels, ctx.constant(np.array(0, label_type)))
    if node.input(2):
        weights = ctx.op("Gather", ctx.forward(node.input(2)), labels)
        if keep is not None:
            weights = ctx.op("Where", keep, weights, ctx.scalar(0, like=node.input(0)))
    elif keep is not None:
        weights = ctx.op("Cast", keep, to=score_type)

    factor, reduction = node.grad(0), node.attr("reduction")
    if reduction == "mean":
        if weights is None:
            total = ctx.op("Cast", ctx.op("Size", labels), to=score_type)
        else:
            # every sample ignored (total 0): PyTorch's gradient is 0, not 0 * (dloss / 0) = NaN
            total = ctx.op("ReduceSum", weights, keepdims=0)
            total = ctx.op("Where", ctx.op("Equal", total, ctx.scalar(0, like=node.input(0))),
                           ctx.scalar(1, like=node.input(0)), total)
        factor = ctx.div(factor, total)
    if weights is not None:
        factor = ctx.mul(factor, weights)
    class_axis = ctx.ints([1])
    if reduction == "none" or weights is not None:
        factor = ctx.op("Unsqueeze", factor, class_axis)
    return factor, ctx.op("Unsqueeze", labels, class_axis)


def subtract_at_labels(ctx: GradientContext, base: str, positions: str, factor: str) -> str:
    """``base`` minus ``factor`` at each sample's label along the class axis."""
    updates = ctx.op("Expand", ctx.neg(factor), ctx.op("Shape", positions))
    return ctx.op("ScatterElements", base, positions, updates, axis=1, reduction="add")
