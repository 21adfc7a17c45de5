from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import axes_input, reshape_to_input
from reference.autodiff.samples import Sample, normal


@gradient_rule("Squeeze", samples=(
    Sample(lambda x: x.unsqueeze(1).squeeze(1) * 2.0, (normal(2, 3),), more=((normal(4, 5),),), name="known_size_one"),
))
def squeeze_grad(ctx, node):
    """Unsqueeze dy on the same axes (they index the input, as Unsqueeze's index its output);
    without axes, reshape to the input's shape."""
    axes = axes_input(ctx, node)
    if axes is None:
        return reshape_to_input(ctx, node)
    return {0: ctx.op("Unsqueeze", node.grad(), axes)}
