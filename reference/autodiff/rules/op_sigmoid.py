import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary
from reference.autodiff.samples import Sample, normal


@gradient_rule("Sigmoid", samples=(
    Sample(torch.sigmoid, (normal(3, 4),), more=((normal(2, 5),),)),
))
@unary
def sigmoid_derivative(ctx, node):
    """d sigmoid(x) = y (1 - y), from the output."""
    y = ctx.forward(node.output(0))
    return ctx.mul(y, ctx.sub(ctx.scalar(1, like=node.output(0)), y))
