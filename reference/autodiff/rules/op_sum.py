from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule


# No samples: tests/reference/autodiff/test_rule_samples.py (EXEMPT) says why.
@gradient_rule("Sum", samples=())
def sum_grad(ctx, node):
    """Variadic Add: every input receives dy, summed back over its broadcast axes."""
    return {i: reduce_to_input(ctx, node, i, node.grad()) for i in node.wanted_inputs}
