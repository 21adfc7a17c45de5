from reference.autodiff.registry import gradient_rule


@gradient_rule("Log")
def log_grad(ctx, node):
    """dx = dy / x."""
    return {0: ctx.div(node.grad(), ctx.forward(node.input(0)))}
