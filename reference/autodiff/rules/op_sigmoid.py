from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary


@gradient_rule("Sigmoid")
@unary
def sigmoid_derivative(ctx, node):
    """d sigmoid(x) = y (1 - y), from the output."""
    y = ctx.forward(node.output(0))
    return ctx.mul(y, ctx.sub(ctx.scalar(1, like=node.output(0)), y))
