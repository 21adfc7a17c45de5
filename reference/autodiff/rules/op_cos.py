import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary
from reference.autodiff.samples import Sample, normal


@gradient_rule("Cos", samples=(
    Sample(torch.cos, (normal(3, 4),), more=((normal(2, 5),),)),
))
@unary
def cos_derivative(ctx, node):
    """d cos(x) = -sin(x)."""
    return ctx.neg(ctx.op("Sin", ctx.forward(node.input(0))))
