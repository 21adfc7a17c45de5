import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("Neg", samples=(
    Sample(torch.neg, (normal(3, 4),), more=((normal(2, 5),),)),
))
def neg_grad(ctx, node):
    return {0: ctx.neg(node.grad())}
