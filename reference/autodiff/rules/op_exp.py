from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary


@gradient_rule("Exp")
@unary
def exp_derivative(ctx, node):
    """d exp(x) = y."""
    return ctx.forward(node.output(0))
