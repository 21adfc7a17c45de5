from reference.autodiff.registry import gradient_rule


@gradient_rule("Relu")
def relu_grad(ctx, node):
    """dx = dy where y > 0 (PyTorch's convention: zero at 0), from the output."""
    output = node.output(0)
    positive = ctx.op("Greater", ctx.forward(output), ctx.scalar(0, like=output))
    return {0: ctx.op("Where", positive, node.grad(), ctx.scalar(0, like=output))}
