from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary


@gradient_rule("Cos")
@unary
def cos_derivative(ctx, node):
    """d cos(x) = -sin(x)."""
    return ctx.neg(ctx.op("Sin", ctx.forward(node.input(0))))
