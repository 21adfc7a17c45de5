from torch import nn

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, normal


@gradient_rule("GlobalAveragePool", samples=(
    Sample(nn.AdaptiveAvgPool2d(1), (normal(2, 3, 4, 5, dtype=F32),), more=((normal(1, 3, 2, 3, dtype=F32),),)),
))
def global_average_pool_grad(ctx, node):
    """Every input position receives its channel's dy divided by the spatial size (read at run time)."""
    x = node.input(0)
    shape = ctx.shape(x)
    spatial = ctx.op("ReduceProd", ctx.op("Slice", shape, ctx.ints([2]), ctx.ints([ctx.rank(x)])), keepdims=0)
    count = ctx.op("Cast", spatial, to=ctx.elem_type(x))
    return {0: ctx.div(ctx.op("Expand", node.grad(), shape), count)}
