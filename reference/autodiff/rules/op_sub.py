from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule


@gradient_rule("Sub")
def sub_grad(ctx, node):
    """dA = dy, dB = -dy; negate after reducing, on the smaller tensor."""
    grads = {}
    if node.wants(0):
        grads[0] = reduce_to_input(ctx, node, 0, node.grad())
    if node.wants(1):
        grads[1] = ctx.neg(reduce_to_input(ctx, node, 1, node.grad()))
    return grads
