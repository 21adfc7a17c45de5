from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import normalized_axis


@gradient_rule("Softmax")
def softmax_grad(ctx, node):
    """dx = y * (dy - sum(dy * y)) along the axis, from the output."""
    y = ctx.forward(node.output(0))
    axis = ctx.ints([normalized_axis(ctx, node)])
    dot = ctx.op("ReduceSum", ctx.mul(node.grad(), y), axis, keepdims=1)
    return {0: ctx.mul(y, ctx.sub(node.grad(), dot))}
