import torch

from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("Sub", samples=(
    Sample(torch.sub, (normal(3, 1, 4), normal(2, 4)), wrt=(0, 1),
           more=((normal(2, 1, 3), normal(5, 3)),), name="broadcast"),
    Sample(torch.sub, (normal(2, 3), normal(2, 3)), wrt=(0, 1),
           more=((normal(4, 1), normal(4, 1)),), name="same_shape"),
))
def sub_grad(ctx, node):
    """dA = dy, dB = -dy; negate after reducing, on the smaller tensor."""
    grads = {}
    if node.wants(0):
        grads[0] = reduce_to_input(ctx, node, 0, node.grad())
    if node.wants(1):
        grads[1] = ctx.neg(reduce_to_input(ctx, node, 1, node.grad()))
    return grads
