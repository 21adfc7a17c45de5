from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary


@gradient_rule("Softplus")
@unary
def softplus_derivative(ctx, node):
    """d log(1 + exp(x)) = sigmoid(x)."""
    return ctx.op("Sigmoid", ctx.forward(node.input(0)))
