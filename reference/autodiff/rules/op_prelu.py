import torch.nn.functional as F

from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, away_from_zero, positive


@gradient_rule("PRelu", samples=(
    Sample(F.prelu, (away_from_zero(2, 3, 4, dtype=F32), positive(3, dtype=F32)), wrt=(0, 1),
           more=((away_from_zero(1, 3, 2, dtype=F32), positive(3, dtype=F32)),), name="per_channel"),
    Sample(F.prelu, (away_from_zero(2, 3, 4, dtype=F32), positive(1, dtype=F32)), wrt=(0, 1),
           more=((away_from_zero(1, 3, 2, dtype=F32), positive(1, dtype=F32)),), name="shared"),
))
def prelu_grad(ctx, node):
    """y = x where x > 0, else slope x (the slope broadcast to x): dx = dy or slope dy, dslope = x dy
    where x <= 0, summed to the slope's shape (PyTorch's convention: the slope's side at 0)."""
    x, slope = ctx.forward(node.input(0)), node.input(1)
    positive = ctx.op("Greater", x, ctx.scalar(0, like=node.input(0)))
    zero = ctx.scalar(0, like=node.input(0))
    grads = {}
    if node.wants(0):
        grads[0] = ctx.op("Where", positive, node.grad(), ctx.mul(node.grad(), ctx.forward(slope)))
    if node.wants(1):
        grads[1] = reduce_to_input(ctx, node, 1, ctx.op("Where", positive, zero, ctx.mul(node.grad(), x)))
    return grads
