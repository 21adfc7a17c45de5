from torch import nn

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("DepthToSpace", samples=(
    Sample(nn.PixelShuffle(2), (normal(2, 8, 2, 3),), more=((normal(1, 8, 3, 1),),)),
))
def depth_to_space_grad(ctx, node):
    """DCR is undone by SpaceToDepth. CRD (PixelShuffle's) moved x[n, c·b·b + i·b + j, h, w] to
    y[n, c, h·b + i, w·b + j]: dy viewed as [N, C, H, b, W, b] is transposed back to
    [N, C, b, b, H, W] and flattened to x's shape."""
    block, x = node.attr("blocksize"), node.input(0)
    if (node.attr("mode") or "DCR") == "DCR":
        return {0: ctx.op("SpaceToDepth", node.grad(), blocksize=block)}
    shape = ctx.shape(x)
    height, width = ctx.op("Gather", shape, ctx.ints([2])), ctx.op("Gather", shape, ctx.ints([3]))
    leading = ctx.op("Slice", ctx.op("Shape", node.grad()), ctx.ints([0]), ctx.ints([2]))  # N, C (sizes: allowzero)
    blocks = ctx.op("Reshape", node.grad(), ctx.op("Concat", leading, height, ctx.ints([block]), width,
                                                    ctx.ints([block]), axis=0), allowzero=1)
    return {0: ctx.op("Reshape", ctx.op("Transpose", blocks, perm=[0, 1, 3, 5, 2, 4]), shape, allowzero=1)}
