from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import normalized_axis


@gradient_rule("Split")
def split_grad(ctx, node):
    """Concatenate the outputs' gradients, zeros for outputs that received none."""
    axis = normalized_axis(ctx, node)
    parts = [node.grad(i) or ctx.zeros_like(node.output(i)) for i in range(node.num_outputs)]
    return {0: ctx.op("Concat", *parts, axis=axis)}
