import math

import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary
from reference.autodiff.samples import F32, Sample, normal


@gradient_rule("Erf", samples=(
    Sample(torch.erf, (normal(3, 4, dtype=F32),), more=((normal(2, 5, dtype=F32),),)),
))
@unary
def erf_derivative(ctx, node):
    """d erf(x) = 2/sqrt(pi) * exp(-x²)."""
    x = ctx.forward(node.input(0))
    minus_x2 = ctx.mul(ctx.mul(x, x), ctx.scalar(-1, like=node.input(0)))
    return ctx.mul(ctx.op("Exp", minus_x2), ctx.scalar(2 / math.sqrt(math.pi), like=node.input(0)))
