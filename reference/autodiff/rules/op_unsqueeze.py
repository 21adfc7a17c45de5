from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import axes_input
from reference.autodiff.samples import Sample, normal


@gradient_rule("Unsqueeze", samples=(
    Sample(lambda x: x.unsqueeze(1) * 2.0, (normal(3, 4),), more=((normal(2, 5),),)),
))
def unsqueeze_grad(ctx, node):
    """Squeeze dy on the same axes: needs no shape."""
    return {0: ctx.op("Squeeze", node.grad(), axes_input(ctx, node))}
