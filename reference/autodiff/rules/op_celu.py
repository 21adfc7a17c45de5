import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, away_from_zero


@gradient_rule("Celu", samples=(
    Sample(lambda x: F.celu(x, alpha=0.5), (away_from_zero(3, 4, scale=2.0, dtype=F32),),
           more=((away_from_zero(2, 5, scale=2.0, dtype=F32),),)),
))
def celu_grad(ctx, node):
    """y = max(0, x) + min(0, alpha (exp(x / alpha) - 1)): dx = dy where x > 0, else exp(x / alpha) dy
    (PyTorch's convention: the exponential side at 0)."""
    like = node.input(0)
    x = ctx.forward(like)
    scaled = ctx.div(x, ctx.scalar(node.attr("alpha"), like=like))
    positive = ctx.op("Greater", x, ctx.scalar(0, like=like))
    return {0: ctx.op("Where", positive, node.grad(), ctx.mul(node.grad(), ctx.op("Exp", scaled)))}
