import torch

from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal, positive


@gradient_rule("Div", samples=(
    Sample(torch.div, (normal(3, 1, 4), positive(2, 4)), wrt=(0, 1),
           more=((normal(2, 1, 3), positive(5, 3)),), name="broadcast"),
    Sample(lambda x, y: y / x, (positive(2, 3), normal(2, 3)), wrt=(0, 1),
           more=((positive(4, 1), normal(4, 1)),), name="same_shape"),
))
def div_grad(ctx, node):
    """y = A / B: dA = dy / B, dB = -(dy / B) * y; both share dy / B."""
    grad_over_b = ctx.div(node.grad(), ctx.forward(node.input(1)))
    grads = {}
    if node.wants(0):
        grads[0] = reduce_to_input(ctx, node, 0, grad_over_b)
    if node.wants(1):
        grads[1] = reduce_to_input(ctx, node, 1, ctx.neg(ctx.mul(grad_over_b, ctx.forward(node.output(0)))))
    return grads
