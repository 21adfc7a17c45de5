from reference.autodiff.registry import gradient_rule


@gradient_rule("Elu")
def elu_grad(ctx, node):
    """dx = dy where x > 0, else alpha exp(x) dy (PyTorch's convention: the exponential side at 0)."""
    x = ctx.forward(node.input(0))
    alpha = ctx.scalar(node.attr("alpha"), like=node.input(0))
    negative_side = ctx.mul(node.grad(), ctx.mul(alpha, ctx.op("Exp", x)))
    return {0: ctx.op("Where", ctx.op("Greater", x, ctx.scalar(0, like=node.input(0))), node.grad(), negative_side)}
