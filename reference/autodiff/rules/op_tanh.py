import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary
from reference.autodiff.samples import Sample, normal


@gradient_rule("Tanh", samples=(
    Sample(torch.tanh, (normal(3, 4),), more=((normal(2, 5),),)),
))
@unary
def tanh_derivative(ctx, node):
    """d tanh(x) = 1 - y², from the output."""
    y = ctx.forward(node.output(0))
    return ctx.sub(ctx.scalar(1, like=node.output(0)), ctx.mul(y, y))
