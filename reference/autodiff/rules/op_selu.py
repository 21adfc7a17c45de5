import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, away_from_zero


@gradient_rule("Selu", samples=(
    Sample(F.selu, (away_from_zero(3, 4, scale=2.0, dtype=F32),),
           more=((away_from_zero(2, 5, scale=2.0, dtype=F32),),)),
))
def selu_grad(ctx, node):
    """y = gamma x where x > 0, else gamma alpha (exp(x) - 1): dx = gamma dy, else gamma alpha exp(x) dy
    (PyTorch's convention: the exponential side at 0)."""
    like = node.input(0)
    x = ctx.forward(like)
    gamma = ctx.scalar(node.attr("gamma"), like=like)
    negative_side = ctx.mul(node.grad(), ctx.mul(ctx.mul(gamma, ctx.scalar(node.attr("alpha"), like=like)), ctx.op("Exp", x)))
    positive = ctx.op("Greater", x, ctx.scalar(0, like=like))
    return {0: ctx.op("Where", positive, ctx.mul(node.grad(), gamma), negative_side)}
