import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, away_from_zero


@gradient_rule("Elu", samples=(
    Sample(F.elu, (away_from_zero(3, 4, scale=2.0, dtype=F32),), more=((away_from_zero(2, 5, scale=2.0, dtype=F32),),)),
    Sample(lambda x: F.elu(x, alpha=0.5), (away_from_zero(3, 4, scale=2.0, dtype=F32),),
           more=((away_from_zero(2, 5, scale=2.0, dtype=F32),),), name="alpha"),
))
def elu_grad(ctx, node):
    """dx = dy where x > 0, else alpha exp(x) dy (PyTorch's convention: the exponential side at 0)."""
    x = ctx.forward(node.input(0))
    alpha = ctx.scalar(node.attr("alpha"), like=node.input(0))
    negative_side = ctx.mul(node.grad(), ctx.mul(alpha, ctx.op("Exp", x)))
    return {0: ctx.op("Where", ctx.op("Greater", x, ctx.scalar(0, like=node.input(0))), node.grad(), negative_side)}
