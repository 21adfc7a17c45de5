import numpy as np
import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import pad_on_axes
from reference.autodiff.samples import Sample, normal


@gradient_rule("Pad", samples=(
    Sample(lambda x: F.pad(x, (2, 0, 1, 3), mode="constant", value=0.5), (normal(2, 3, 4, 5),),
           more=((normal(1, 2, 6, 7),),), name="constant"),
    Sample(lambda x: F.pad(x, (1, 3, 2, 0), mode="reflect"), (normal(2, 3, 4, 5),),
           more=((normal(1, 2, 6, 7),),), name="reflect"),
    Sample(lambda x: F.pad(x, (0, 4, 2, 1), mode="replicate"), (normal(2, 3, 4, 5),),
           more=((normal(1, 2, 6, 7),),), name="edge"),
    Sample(lambda x: F.pad(x, (-1, 2, 1, -2), mode="constant"), (normal(2, 3, 4, 5),),
           more=((normal(1, 2, 6, 7),),), name="negative_crops"),
))
def pad_grad(ctx, node):
    """constant: dX is dY padded by the negated pads (a crop, or zeros where the forward cropped).
    reflect/edge/wrap: along each padded axis, every position of dY is added to the input position
    it was copied from; those positions are a Range padded the same way (the axes are separable, so
    corners compose). Pads and sizes are read at run time. The constant value receives what dX left."""
    x, dy, grads = node.input(0), node.grad(), {}
    mode = node.attr("mode") or "constant"
    pads = ctx.as_int64(node.input(1)) if node.input(1) else ctx.ints(node.attr("pads"))
    axes = ctx.as_int64(node.input(3)) if node.input(3) else ""
    if mode == "constant" and not axes:
        dx = ctx.op("Pad", dy, ctx.neg(pads))
    elif mode == "constant":  # over every axis (rules/common.py, pad_on_axes: onnxruntime's optimizer)
        count = len(_axes(ctx, node, ctx.rank(x)))
        cut = ctx.neg(pads)
        begins = ctx.op("Slice", cut, ctx.ints([0]), ctx.ints([count]))
        ends = ctx.op("Slice", cut, ctx.ints([count]), ctx.ints([2 * count]))
        dx = pad_on_axes(ctx, dy, ctx.rank(x), axes, begins, ends)
    else:
        dx = _scatter_back(ctx, node, dy, pads, mode)
    if node.wants(0):
        grads[0] = dx
    if node.wants(2):
        left = ctx.sub(ctx.op("ReduceSum", dy, keepdims=0), ctx.op("ReduceSum", dx, keepdims=0))
        grads[2] = ctx.op("Reshape", left, ctx.shape(node.input(2)))
    return grads


def _scatter_back(ctx, node, grad: str, pads: str, mode: str) -> str:
    x, rank = node.input(0), ctx.rank(node.input(0))
    axes = _axes(ctx, node, rank)
    known = ctx.constant_value(node.input(1)) if node.input(1) else np.array(node.attr("pads"))
    zero, one = ctx.constant(np.array(0, np.int64)), ctx.constant(np.array(1, np.int64))
    for j, axis in enumerate(axes):
        if known is not None and known[j] == 0 and known[len(axes) + j] == 0:
            continue
        size = ctx.dim_size(x, axis)
        positions = ctx.op("Range", zero, ctx.op("Squeeze", size), one)
        axis_pads = ctx.op("Gather", pads, ctx.ints([j, len(axes) + j]))
        source = ctx.op("Pad", positions, axis_pads, mode=mode)  # input position of each output position
        along = [1] * rank
        along[axis] = -1
        grad_shape = ctx.op("Shape", grad)
        indices = ctx.op("Expand", ctx.op("Reshape", source, ctx.ints(along)), grad_shape)
        target = ctx.op("ScatterElements", grad_shape, ctx.ints([axis]), size, axis=0)
        grad = ctx.op("ScatterElements", ctx.zeros(target, like=x), indices, grad, axis=axis, reduction="add")
    return grad


def _axes(ctx, node, rank: int) -> list[int]:
    if not node.input(3):
        return list(range(rank))
    axes = ctx.constant_value(node.input(3))
    if axes is None:
        raise ValueError(f"Pad node '{node.name}': mode {node.attr('mode')!r} needs constant axes for its gradient")
    return [int(a) % rank for a in axes.reshape(-1)]
