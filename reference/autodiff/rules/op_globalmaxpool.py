from torch import nn

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, distinct


@gradient_rule("GlobalMaxPool", samples=(
    Sample(nn.AdaptiveMaxPool2d(1), (distinct(2, 3, 4, 5, dtype=F32),), more=((distinct(1, 3, 2, 3, dtype=F32),),)),
))
def global_max_pool_grad(ctx, node):
    """dy goes to the first position of its channel's maximum, as PyTorch's adaptive max pooling to
    size 1 (which exports to GlobalMaxPool) routes it; ties don't share it (unlike ``amax``)."""
    x = node.input(0)
    flat_shape = ctx.ints([0, 0, -1])
    flat = ctx.op("Reshape", ctx.forward(x), flat_shape)
    first = ctx.op("ArgMax", flat, axis=2, keepdims=1, select_last_index=0)
    zeros = ctx.op("Reshape", ctx.zeros_like(x), flat_shape)
    placed = ctx.op("ScatterElements", zeros, first, ctx.op("Reshape", node.grad(), ctx.ints([0, 0, 1])), axis=2)
    return {0: ctx.op("Reshape", placed, ctx.shape(x))}
