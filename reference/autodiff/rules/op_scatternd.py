from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_scatter import scatter_grads


@gradient_rule("ScatterND")
def scatter_nd_grad(ctx, node):
    """See ``scatter_grads``: updates gather dy with GatherND."""
    return scatter_grads(ctx, node, "GatherND")
