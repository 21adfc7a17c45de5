import math

import numpy as np

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import expand_to_input
from reference.autodiff.samples import Sample, normal


@gradient_rule("ReduceMean", samples=(
    Sample(lambda x: x.mean(-1, keepdim=True), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="keepdims"),
    Sample(lambda x: x.mean((0, 2)), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="two_axes"),
    Sample(lambda x: x.mean(), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="all"),
))
def reduce_mean_grad(ctx, node):
    """dy / (elements averaged per output), broadcast back over the input.

    The count is a build-time constant when the reduced sizes are static, else size(x) / size(dy).
    """
    x, grad = node.input(0), node.grad()
    count = _static_count(ctx, node)
    if count is None:
        outputs = ctx.op("Max", ctx.op("Size", grad), ctx.constant(np.array(1, dtype=np.int64)))  # no output (an empty dy): any count will do
        per_output = ctx.div(ctx.op("ReduceProd", ctx.shape(x), keepdims=0), outputs)
        grad = ctx.div(grad, ctx.op("Cast", per_output, to=ctx.elem_type(x)))
    elif count != 1:
        grad = ctx.mul(grad, ctx.scalar(1 / count, like=x))
    return {0: expand_to_input(ctx, node, grad)}


def _static_count(ctx, node) -> int | None:
    dims = ctx.dims(node.input(0)) or []
    if node.input(1):
        axes = ctx.constant_value(node.input(1))
        if axes is None:
            return None
        axes = axes.tolist()
    else:
        axes = node.attr("axes")
    if not axes:
        if node.attr("noop_with_empty_axes"):
            return 1
        axes = range(len(dims))
    sizes = [dims[a] for a in axes] if dims else [None]
    return math.prod(sizes) if all(isinstance(s, int) for s in sizes) else None
