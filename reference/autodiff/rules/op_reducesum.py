from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import expand_to_input


@gradient_rule("ReduceSum")
def reduce_sum_grad(ctx, node):
    """Every summed element receives dy: broadcast it back over the input."""
    return {0: expand_to_input(ctx, node, node.grad())}
