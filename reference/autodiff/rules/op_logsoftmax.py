from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import fused_in_float32, log_softmax_backward, normalized_axis
from reference.autodiff.samples import Sample, normal


@gradient_rule("LogSoftmax", samples=(
    Sample(lambda x: x.log_softmax(-1), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="dim_minus1"),
    Sample(lambda x: x.log_softmax(1), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="dim_1"),
))
def log_softmax_grad(ctx, node):
    """dx = dy - exp(y) * sum(dy) along the axis, from the output (in float32 for half precision)."""
    axis = normalized_axis(ctx, node)
    return {0: fused_in_float32(ctx, lambda y, dy: log_softmax_backward(ctx, dy, y, axis),
                                ctx.forward(node.output(0)), node.grad())}
