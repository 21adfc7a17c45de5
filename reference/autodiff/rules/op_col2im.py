import numpy as np
from torch import nn

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, normal


@gradient_rule("Col2Im", since=18, samples=(
    Sample(nn.Fold((5, 6), (2, 3)), (normal(2, 18, 16, dtype=F32),),
           more=((normal(1, 18, 16, dtype=F32),),), name="plain"),
    Sample(nn.Fold((5, 6), (2, 3), stride=2, padding=1), (normal(2, 18, 9, dtype=F32),),
           more=((normal(1, 18, 9, dtype=F32),),), name="strided_padded"),
))
def col2im_grad(ctx, node):
    """Col2Im sums blocks into an image (``nn.Fold``); its gradient reads the blocks back out of dY
    (``nn.Unfold``): a Conv of each channel, as its own image, by one one-hot kernel per block
    position, with Col2Im's pads, strides and dilations. Multiplying by 1 and adding zeros, it is exact."""
    block = ctx.constant_value(node.input(2))
    if block is None:
        raise ValueError(f"Col2Im node '{node.name}': the block shape must be a constant")
    block = [int(b) for b in block]
    positions = int(np.prod(block))
    kernels = np.eye(positions, dtype=ctx.np_dtype(node.input(0))).reshape(positions, 1, *block)
    dy = node.grad()
    dy_shape = ctx.op("Shape", dy)
    images = ctx.op("Reshape", dy, ctx.op("Concat", ctx.ints([-1, 1]), ctx.op("Slice", dy_shape, ctx.ints([2]),
                                                                                    ctx.ints([4])), axis=0))
    blocks = ctx.op("Conv", images, ctx.constant(kernels), pads=node.attr("pads") or [0] * 4,
                    strides=node.attr("strides") or [1, 1], dilations=node.attr("dilations") or [1, 1])
    return {0: ctx.op("Reshape", blocks, ctx.shape(node.input(0)))}
