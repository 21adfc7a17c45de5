from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule


@gradient_rule("Add")
def add_grad(ctx, node):
    """dA = dB = dy, each summed back over its broadcast axes."""
    return {i: reduce_to_input(ctx, node, i, node.grad()) for i in node.wanted_inputs}
