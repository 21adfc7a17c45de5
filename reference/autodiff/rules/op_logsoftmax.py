from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import log_softmax_backward, normalized_axis


@gradient_rule("LogSoftmax")
def log_softmax_grad(ctx, node):
    """dx = dy - exp(y) * sum(dy) along the axis, from the output."""
    axis = normalized_axis(ctx, node)
    return {0: log_softmax_backward(ctx, node.grad(), ctx.forward(node.output(0)), axis)}
