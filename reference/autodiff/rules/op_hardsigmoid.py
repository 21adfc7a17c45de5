import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, normal


@gradient_rule("HardSigmoid", samples=(
    Sample(F.hardsigmoid, (normal(3, 4, scale=4.0, dtype=F32),), more=((normal(2, 5, scale=4.0, dtype=F32),),)),
))
def hard_sigmoid_grad(ctx, node):
    """y = max(0, min(1, alpha x + beta)): dx = alpha dy strictly inside the ramp, 0 outside and at
    its ends (PyTorch's hardsigmoid: -3 < x < 3). ``nn.Hardsigmoid`` exports alpha = 1/6."""
    like = node.input(0)
    ramp = ctx.add(ctx.mul(ctx.forward(like), ctx.scalar(node.attr("alpha"), like=like)), ctx.scalar(node.attr("beta"), like=like))
    inside = ctx.op("And", ctx.op("Greater", ramp, ctx.scalar(0, like=like)), ctx.op("Less", ramp, ctx.scalar(1, like=like)))
    return {0: ctx.op("Where", inside, ctx.mul(node.grad(), ctx.scalar(node.attr("alpha"), like=like)), ctx.scalar(0, like=like))}
