from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import inverse_permutation


@gradient_rule("Transpose")
def transpose_grad(ctx, node):
    """Transpose dy by the inverse permutation (default perm reverses the axes)."""
    perm = node.attr("perm") or list(reversed(range(ctx.rank(node.input(0)))))
    return {0: ctx.op("Transpose", node.grad(), perm=inverse_permutation(perm))}
