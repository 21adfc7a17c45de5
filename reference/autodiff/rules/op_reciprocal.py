from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary


@gradient_rule("Reciprocal")
@unary
def reciprocal_derivative(ctx, node):
    """d (1/x) = -y * y, from the output."""
    output = ctx.forward(node.output(0))
    return ctx.neg(ctx.mul(output, output))
