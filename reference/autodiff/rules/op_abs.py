from reference.autodiff.registry import gradient_rule


@gradient_rule("Abs")
def abs_grad(ctx, node):
    """dx = dy * sign(x) (PyTorch's convention: zero at 0)."""
    return {0: ctx.mul(node.grad(), ctx.op("Sign", ctx.forward(node.input(0))))}
