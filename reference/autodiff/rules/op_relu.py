import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, away_from_zero


@gradient_rule("Relu", samples=(
    Sample(torch.relu, (away_from_zero(3, 4),), more=((away_from_zero(2, 5),),)),
))
def relu_grad(ctx, node):
    """dx = dy where y > 0 (PyTorch's convention: zero at 0), from the output."""
    output = node.output(0)
    positive = ctx.op("Greater", ctx.forward(output), ctx.scalar(0, like=output))
    return {0: ctx.op("Where", positive, node.grad(), ctx.scalar(0, like=output))}
