import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary
from reference.autodiff.samples import Sample, normal


@gradient_rule("Exp", samples=(
    Sample(torch.exp, (normal(3, 4),), more=((normal(2, 5),),)),
))
@unary
def exp_derivative(ctx, node):
    """d exp(x) = y."""
    return ctx.forward(node.output(0))
