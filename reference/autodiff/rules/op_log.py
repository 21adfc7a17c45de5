import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, positive


@gradient_rule("Log", samples=(
    Sample(torch.log, (positive(3, 4),), more=((positive(2, 5),),)),
))
def log_grad(ctx, node):
    """dx = dy / x."""
    return {0: ctx.div(node.grad(), ctx.forward(node.input(0)))}
