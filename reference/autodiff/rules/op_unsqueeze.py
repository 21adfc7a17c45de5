from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import axes_input


@gradient_rule("Unsqueeze")
def unsqueeze_grad(ctx, node):
    """Squeeze dy on the same axes: needs no shape."""
    return {0: ctx.op("Squeeze", node.grad(), axes_input(ctx, node))}
