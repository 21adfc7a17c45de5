import torch

from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, away_from_zero, normal


@gradient_rule("Where", samples=(
    Sample(lambda x, y: torch.where(x > 0, x, y), (away_from_zero(2, 3, 4), normal(3, 1)), wrt=(0, 1),
           more=((away_from_zero(1, 2, 5), normal(2, 1)),), name="broadcast"),
))
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
