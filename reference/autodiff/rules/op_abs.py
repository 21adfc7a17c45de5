import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, away_from_zero


@gradient_rule("Abs", samples=(
    Sample(torch.abs, (away_from_zero(3, 4),), more=((away_from_zero(2, 5),),)),
))
def abs_grad(ctx, node):
    """dx = dy * sign(x) (PyTorch's convention: zero at 0)."""
    return {0: ctx.mul(node.grad(), ctx.op("Sign", ctx.forward(node.input(0))))}
