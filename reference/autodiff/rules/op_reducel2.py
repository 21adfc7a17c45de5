import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import expand_to_input
from reference.autodiff.samples import Sample, normal


@gradient_rule("ReduceL2", samples=(
    Sample(lambda x: x.norm(dim=1), (normal(3, 4),), more=((normal(2, 5),),), name="axis"),
    Sample(lambda x: torch.linalg.vector_norm(x, dim=(0, 2), keepdim=True), (normal(2, 3, 4),),
           more=((normal(1, 2, 5),),), name="keepdims"),
))
def reduce_l2_grad(ctx, node):
    """y = sqrt(Σ x²) over the axes: dx = x dy / y, and 0 where y = 0 (PyTorch's norm: a zero
    vector's subgradient is 0)."""
    like = node.input(0)
    y = expand_to_input(ctx, node, ctx.forward(node.output(0)))
    grad = expand_to_input(ctx, node, node.grad())
    zero = ctx.scalar(0, like=like)
    scaled = ctx.div(ctx.mul(ctx.forward(like), grad), y)
    return {0: ctx.op("Where", ctx.op("Equal", y, zero), zero, scaled)}
