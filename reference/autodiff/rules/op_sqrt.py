import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary
from reference.autodiff.samples import Sample, positive


@gradient_rule("Sqrt", samples=(
    Sample(torch.sqrt, (positive(3, 4),), more=((positive(2, 5),),)),
))
@unary
def sqrt_derivative(ctx, node):
    """d sqrt(x) = 0.5 / y, from the output."""
    output = node.output(0)
    return ctx.div(ctx.scalar(0.5, like=output), ctx.forward(output))
