from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import normalized_axis
from reference.autodiff.samples import Sample, normal


@gradient_rule("Split", samples=(
    Sample(lambda x: x.split(2, -1)[1] * x.chunk(2, -1)[0], (normal(2, 3, 4),),
           more=((normal(1, 2, 4),),), name="equal_parts"),
    Sample(lambda x: x.split([1, 3], 0)[1] * 2.0, (normal(4, 2),), name="unused_part"),
))
def split_grad(ctx, node):
    """Concatenate the outputs' gradients, zeros for outputs that received none."""
    axis = normalized_axis(ctx, node)
    parts = [node.grad(i) or ctx.zeros_like(node.output(i)) for i in range(node.num_outputs)]
    return {0: ctx.op("Concat", *parts, axis=axis)}
