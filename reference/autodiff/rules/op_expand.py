from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule


@gradient_rule("Expand")
def expand_grad(ctx, node):
    """Expand is broadcasting: sum dy back to the input's shape."""
    return {0: reduce_to_input(ctx, node, 0, node.grad())}
