from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import expand_to_input
from reference.autodiff.samples import Sample, normal


@gradient_rule("ReduceSum", samples=(
    Sample(lambda x: x.sum(0), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="axis"),
    Sample(lambda x: x.sum((1, 2), keepdim=True), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="keepdims"),
    Sample(lambda x: x.sum(), (normal(2, 3, 4),), more=((normal(1, 2, 5),),), name="all"),
))
def reduce_sum_grad(ctx, node):
    """Every summed element receives dy: broadcast it back over the input."""
    return {0: expand_to_input(ctx, node, node.grad())}
