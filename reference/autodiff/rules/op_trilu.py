from reference.autodiff.registry import gradient_rule


@gradient_rule("Trilu")
def trilu_grad(ctx, node):
    """The same triangle of dy is kept."""
    inputs = [node.grad()] + ([ctx.forward(node.input(1))] if node.input(1) else [])
    return {0: ctx.op("Trilu", *inputs, upper=node.attr("upper"))}
