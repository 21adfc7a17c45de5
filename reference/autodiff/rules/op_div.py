from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule


@gradient_rule("Div")
def div_grad(ctx, node):
    """y = A / B: dA = dy / B, dB = -(dy / B) * y; both share dy / B."""
    grad_over_b = ctx.div(node.grad(), ctx.forward(node.input(1)))
    grads = {}
    if node.wants(0):
        grads[0] = reduce_to_input(ctx, node, 0, grad_over_b)
    if node.wants(1):
        grads[1] = reduce_to_input(ctx, node, 1, ctx.neg(ctx.mul(grad_over_b, ctx.forward(node.output(0)))))
    return grads
