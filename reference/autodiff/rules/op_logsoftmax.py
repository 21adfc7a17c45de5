from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import fused_in_float32, log_softmax_backward, normalized_axis


@gradient_rule("LogSoftmax")
def log_softmax_grad(ctx, node):
    """dx = dy - exp(y) * sum(dy) along the axis, from the output (in float32 for half precision)."""
    axis = normalized_axis(ctx, node)
    return {0: fused_in_float32(ctx, lambda y, dy: log_softmax_backward(ctx, dy, y, axis),
                                ctx.forward(node.output(0)), node.grad())}
