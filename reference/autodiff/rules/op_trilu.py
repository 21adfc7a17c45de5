import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("Trilu", samples=(
    Sample(lambda x: torch.triu(x, 1) * 1.0, (normal(3, 4, 4),), more=((normal(2, 5, 4),),), name="upper_offset"),
    Sample(lambda x: torch.tril(x) * 1.0, (normal(4, 3),), more=((normal(4, 3),),), name="lower"),
))
def trilu_grad(ctx, node):
    """The same triangle of dy is kept."""
    inputs = [node.grad()] + ([ctx.forward(node.input(1))] if node.input(1) else [])
    return {0: ctx.op("Trilu", *inputs, upper=node.attr("upper"))}
