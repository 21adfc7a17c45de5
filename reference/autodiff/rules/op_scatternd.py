from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_scatter import scatter_grads
from reference.autodiff.samples import Sample, fixed, normal


@gradient_rule("ScatterND", samples=(
    Sample(lambda d, s, rows: d.index_put((rows,), s, accumulate=True), (normal(5, 3), normal(3, 3), fixed([4, 0, 2])),
           wrt=(0, 1)),
))
def scatter_nd_grad(ctx, node):
    """See ``scatter_grads``: updates gather dy with GatherND."""
    return scatter_grads(ctx, node, "GatherND")
