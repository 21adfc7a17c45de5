from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary


@gradient_rule("Sqrt")
@unary
def sqrt_derivative(ctx, node):
    """d sqrt(x) = 0.5 / y, from the output."""
    output = node.output(0)
    return ctx.div(ctx.scalar(0.5, like=output), ctx.forward(output))
