import math

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary


@gradient_rule("Erf")
@unary
def erf_derivative(ctx, node):
    """d erf(x) = 2/sqrt(pi) * exp(-x²)."""
    x = ctx.forward(node.input(0))
    minus_x2 = ctx.mul(ctx.mul(x, x), ctx.scalar(-1, like=node.input(0)))
    return ctx.mul(ctx.op("Exp", minus_x2), ctx.scalar(2 / math.sqrt(math.pi), like=node.input(0)))
