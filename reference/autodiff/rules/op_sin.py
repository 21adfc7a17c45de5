from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary


@gradient_rule("Sin")
@unary
def sin_derivative(ctx, node):
    """d sin(x) = cos(x)."""
    return ctx.op("Cos", ctx.forward(node.input(0)))
