from reference.autodiff.registry import gradient_rule


@gradient_rule("LeakyRelu")
def leaky_relu_grad(ctx, node):
    """dx = dy where x > 0, else alpha dy (PyTorch's convention: alpha at 0)."""
    x = node.input(0)
    alpha = node.attr("alpha")
    positive = ctx.op("Greater", ctx.forward(x), ctx.scalar(0, like=x))
    return {0: ctx.op("Where", positive, node.grad(), ctx.mul(node.grad(), ctx.scalar(alpha, like=x)))}
