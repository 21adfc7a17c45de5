from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import inverse_permutation
from reference.autodiff.samples import Sample, normal


@gradient_rule("Transpose", samples=(
    Sample(lambda x: x.permute(2, 0, 1) * 1.0, (normal(2, 3, 4),), more=((normal(1, 2, 5),),)),
))
def transpose_grad(ctx, node):
    """Transpose dy by the inverse permutation (default perm reverses the axes)."""
    perm = node.attr("perm") or list(reversed(range(ctx.rank(node.input(0)))))
    return {0: ctx.op("Transpose", node.grad(), perm=inverse_permutation(perm))}
