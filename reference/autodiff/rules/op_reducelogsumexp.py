import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import expand_to_input
from reference.autodiff.samples import Sample, normal


@gradient_rule("ReduceLogSumExp", samples=(
    Sample(lambda x: torch.logsumexp(x, dim=1), (normal(3, 4),), more=((normal(2, 5),),), name="axis"),
    Sample(lambda x: torch.logsumexp(x, dim=(0, 2), keepdim=True), (normal(2, 3, 4),),
           more=((normal(1, 2, 5),),), name="keepdims"),
))
def reduce_log_sum_exp_grad(ctx, node):
    """y = log Σ exp(x) over the axes: dx = dy exp(x - y), the softmax of x along them."""
    x = ctx.forward(node.input(0))
    y = expand_to_input(ctx, node, ctx.forward(node.output(0)))
    return {0: ctx.mul(expand_to_input(ctx, node, node.grad()), ctx.op("Exp", ctx.sub(x, y)))}
