from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary


@gradient_rule("Tanh")
@unary
def tanh_derivative(ctx, node):
    """d tanh(x) = 1 - y², from the output."""
    y = ctx.forward(node.output(0))
    return ctx.sub(ctx.scalar(1, like=node.output(0)), ctx.mul(y, y))
