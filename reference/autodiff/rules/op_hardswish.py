import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, normal


@gradient_rule("HardSwish", samples=(
    Sample(F.hardswish, (normal(3, 4, scale=4.0, dtype=F32),), more=((normal(2, 5, scale=4.0, dtype=F32),),)),
))
def hard_swish_grad(ctx, node):
    """y = x relu6(x + 3) / 6: dx = 0 below -3, dy (x / 3 + 1/2) up to 3 (inclusive, as PyTorch),
    dy above."""
    x = ctx.forward(node.input(0))
    like = node.input(0)
    ramp = ctx.mul(node.grad(), ctx.add(ctx.div(x, ctx.scalar(3, like=like)), ctx.scalar(0.5, like=like)))
    upper = ctx.op("Where", ctx.op("LessOrEqual", x, ctx.scalar(3, like=like)), ramp, node.grad())
    return {0: ctx.op("Where", ctx.op("Less", x, ctx.scalar(-3, like=like)), ctx.scalar(0, like=like), upper)}
