from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_scatter import scatter_grads
from reference.autodiff.samples import Sample, fixed, normal


@gradient_rule("ScatterElements", samples=(
    Sample(lambda d, s, i: d.scatter_add(0, i, s), (normal(5, 3), normal(2, 3), fixed([[0, 1, 4], [3, 0, 2]])),
           wrt=(0, 1), name="add"),
    Sample(lambda d, s, i: d.scatter(0, i, s), (normal(5, 3), normal(2, 3), fixed([[0, 1, 4], [3, 0, 2]])),
           wrt=(0, 1), name="overwrite"),
))
def scatter_elements_grad(ctx, node):
    """See ``scatter_grads``: updates gather dy with GatherElements along the same axis."""
    return scatter_grads(ctx, node, "GatherElements", axis=node.attr("axis"))
