import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


# exclusive and reverse: no torch function exports them (torch.cumsum has neither; flip exports a Slice).
@gradient_rule("CumSum", samples=(
    Sample(lambda x: torch.cumsum(x, 1), (normal(3, 4),), more=((normal(2, 5),),), name="forward"),
    Sample(lambda x: torch.cumsum(x, 0), (normal(3, 4),), more=((normal(2, 5),),), name="axis_0"),
    Sample(lambda x: x.flip(1).cumsum(1).flip(1), (normal(3, 4),), more=((normal(2, 5),),), name="flipped_by_slices"),
))
def cumsum_grad(ctx, node):
    """Each dy[i] reaches every x[j] the sum ran over: the cumulative sum of dy the other way
    along the same axis, as exclusive as the forward."""
    axis = ctx.forward(node.input(1))
    return {0: ctx.op("CumSum", node.grad(), axis, exclusive=node.attr("exclusive"),
                      reverse=1 - node.attr("reverse"))}
