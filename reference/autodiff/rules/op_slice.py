import numpy as np

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import pad_on_axes
from reference.autodiff.samples import Sample, normal


@gradient_rule("Slice", samples=(
    Sample(lambda x: x[1:, :-1, 1:3] * 1.0, (normal(3, 4, 5),), more=((normal(4, 5, 6),),), name="unit_steps"),
    Sample(lambda x: x[::2, 1::3] * 1.0, (normal(5, 7),), more=((normal(5, 7),),), name="steps"),
))
def slice_grad(ctx, node):
    """Place dy back where the slice came from, zeros elsewhere.

    Unit steps (what PyTorch emits for ``x[a:b]``) zero-pad dy; other steps scatter dy to the
    positions obtained by slicing a tensor of flat positions the same way.
    """
    steps = ctx.constant_value(node.input(4))
    if not node.input(4) or (steps is not None and bool((steps == 1).all())):
        return {0: _pad_back(ctx, node)}
    return {0: _scatter_back(ctx, node)}


def _pad_back(ctx, node) -> str:
    """Pad by the start and by size - end, both normalized and clamped like Slice does."""
    if node.input(3):
        axes = ctx.as_int64(node.input(3))
    else:
        axes = ctx.ints(range(ctx.dims(node.input(1))[0]))
    sizes = ctx.op("Gather", ctx.shape(node.input(0)), axes)
    start = _clamp(ctx, _wrap(ctx, ctx.as_int64(node.input(1)), sizes), ctx.constant(np.array(0, np.int64)), sizes)
    end = _clamp(ctx, _wrap(ctx, ctx.as_int64(node.input(2)), sizes), start, sizes)
    return pad_on_axes(ctx, node.grad(), ctx.rank(node.input(0)), axes, start, ctx.sub(sizes, end))


def _wrap(ctx, index: str, sizes: str) -> str:
    negative = ctx.op("Less", index, ctx.constant(np.array(0, np.int64)))
    return ctx.op("Where", negative, ctx.add(index, sizes), index)


def _clamp(ctx, value: str, low: str, high: str) -> str:
    return ctx.op("Min", ctx.op("Max", value, low), high)


def _scatter_back(ctx, node) -> str:
    x = node.input(0)
    shape = ctx.shape(x)
    count = ctx.op("ReduceProd", shape, keepdims=1)
    flat = ctx.op(
        "Range", ctx.constant(np.array(0, np.int64)), ctx.op("Squeeze", count), ctx.constant(np.array(1, np.int64))
    )
    slice_args = [ctx.forward(node.input(i)) if node.input(i) else "" for i in range(1, node.num_inputs)]
    picked = ctx.op("Slice", ctx.op("Reshape", flat, shape, allowzero=1), *slice_args)
    flat_shape = ctx.ints([-1])
    scattered = ctx.op(
        "ScatterElements", ctx.zeros(count, like=x), ctx.op("Reshape", picked, flat_shape),
        ctx.op("Reshape", node.grad(), flat_shape), axis=0,
    )
    return ctx.op("Reshape", scattered, shape, allowzero=1)
