import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, distinct


@gradient_rule("MaxPool", samples=(
    Sample(lambda x: F.max_pool1d(x, 3, stride=1), (distinct(2, 3, 7),),
           more=((distinct(1, 3, 9),),), name="overlapping_1d"),
    Sample(lambda x: F.max_pool2d(x, 2, stride=1, padding=1, dilation=2), (distinct(1, 2, 4, 5),),
           more=((distinct(2, 2, 5, 6),),), name="padded_dilated_2d"),
))
def max_pool_grad(ctx, node):
    """Each dy is added at the input position its window's maximum came from: the node's Indices
    output (flat over the whole input, padding not counted; added to the forward node when the
    export omitted it). Windows sharing a maximum add up, as in PyTorch."""
    x = node.input(0)
    flat = ctx.ints([-1])
    indices = ctx.op("Reshape", ctx.forward_output(node.proto, 1), flat)
    zeros = ctx.op("Reshape", ctx.zeros_like(x), flat)
    summed = ctx.op("ScatterElements", zeros, indices, ctx.op("Reshape", node.grad(), flat), axis=0, reduction="add")
    return {0: ctx.op("Reshape", summed, ctx.shape(x))}
