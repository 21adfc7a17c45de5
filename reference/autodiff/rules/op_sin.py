import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary
from reference.autodiff.samples import Sample, normal


@gradient_rule("Sin", samples=(
    Sample(torch.sin, (normal(3, 4),), more=((normal(2, 5),),)),
))
@unary
def sin_derivative(ctx, node):
    """d sin(x) = cos(x)."""
    return ctx.op("Cos", ctx.forward(node.input(0)))
