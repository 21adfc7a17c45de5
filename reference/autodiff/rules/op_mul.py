import torch

from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("Mul", samples=(
    Sample(torch.mul, (normal(3, 1, 4), normal(2, 4)), wrt=(0, 1),
           more=((normal(2, 1, 3), normal(5, 3)),), name="broadcast"),
    Sample(torch.mul, (normal(2, 3), normal(2, 3)), wrt=(0, 1),
           more=((normal(4, 1), normal(4, 1)),), name="same_shape"),
))
def mul_grad(ctx, node):
    """dA = dy * B, dB = dy * A, each summed back over its broadcast axes."""
    grads = {}
    for i in node.wanted_inputs:
        other = ctx.forward(node.input(1 - i))
        grads[i] = reduce_to_input(ctx, node, i, ctx.mul(node.grad(), other))
    return grads
