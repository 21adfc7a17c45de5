from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_scatter import scatter_grads


@gradient_rule("ScatterElements")
def scatter_elements_grad(ctx, node):
    """See ``scatter_grads``: updates gather dy with GatherElements along the same axis."""
    return scatter_grads(ctx, node, "GatherElements", axis=node.attr("axis"))
