import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary
from reference.autodiff.samples import Sample, positive


@gradient_rule("Reciprocal", samples=(
    Sample(torch.reciprocal, (positive(3, 4),), more=((positive(2, 5),),)),
))
@unary
def reciprocal_derivative(ctx, node):
    """d (1/x) = -y * y, from the output."""
    output = ctx.forward(node.output(0))
    return ctx.neg(ctx.mul(output, output))
