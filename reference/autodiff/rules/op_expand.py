from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("Expand", samples=(
    Sample(lambda x, y: x.expand_as(y) * y, (normal(1, 4), normal(3, 4)), wrt=(0, 1),
           more=((normal(1, 2), normal(5, 2)),), name="expand_as"),
    Sample(lambda x: x.expand(2, 3, 4) * 1.0, (normal(3, 1),), name="constant_shape"),
))
def expand_grad(ctx, node):
    """Expand is broadcasting: sum dy back to the input's shape."""
    return {0: reduce_to_input(ctx, node, 0, node.grad())}
