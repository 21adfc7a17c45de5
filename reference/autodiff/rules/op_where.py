from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule


@gradient_rule("Where")
def where_grad(ctx, node):
    """dy flows to X where the condition holds and to Y elsewhere (masked_fill keeps only Y's)."""
    condition = ctx.forward(node.input(0))
    zero = ctx.scalar(0, like=node.output(0))
    grads = {}
    if node.wants(1):
        grads[1] = reduce_to_input(ctx, node, 1, ctx.op("Where", condition, node.grad(), zero))
    if node.wants(2):
        grads[2] = reduce_to_input(ctx, node, 2, ctx.op("Where", condition, zero, node.grad()))
    return grads
