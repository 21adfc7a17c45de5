from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule


@gradient_rule("Mul")
def mul_grad(ctx, node):
    """dA = dy * B, dB = dy * A, each summed back over its broadcast axes."""
    grads = {}
    for i in node.wanted_inputs:
        other = ctx.forward(node.input(1 - i))
        grads[i] = reduce_to_input(ctx, node, i, ctx.mul(node.grad(), other))
    return grads
