from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import fused_in_float32, normalized_axis
from reference.autodiff.samples import Sample, normal


@gradient_rule("Softmax", samples=(
    Sample(lambda x: x.softmax(-1), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="dim_minus1"),
    Sample(lambda x: x.softmax(1), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="dim_1"),
    Sample(lambda x: x.softmax(0), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="dim_0"),
))
def softmax_grad(ctx, node):
    """dx = y * (dy - sum(dy * y)) along the axis, from the output (in float32 for half precision)."""
    axis = ctx.ints([normalized_axis(ctx, node)])

    def formula(y, dy):
        return ctx.mul(y, ctx.sub(dy, ctx.op("ReduceSum", ctx.mul(dy, y), axis, keepdims=1)))

    return {0: fused_in_float32(ctx, formula, ctx.forward(node.output(0)), node.grad())}
