from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import inverse_permutation


@gradient_rule("Gather")
def gather_grad(ctx, node):
    """Scatter-add dy into zeros shaped like the data, so repeated ids (embeddings) accumulate.

    ScatterND indexes leading axes, so a gather along another axis scatters into a transposed view.
    """
    data, indices = node.input(0), node.input(1)
    rank, index_rank = ctx.rank(data), ctx.rank(indices)
    axis = node.attr("axis") % rank
    positions = ctx.op("Unsqueeze", ctx.forward(indices), ctx.ints([-1]))
    grad, shape = node.grad(), ctx.shape(data)
    if axis:
        data_perm = [axis, *range(axis), *range(axis + 1, rank)]
        grad_perm = [*range(axis, axis + index_rank), *range(axis), *range(axis + index_rank, rank + index_rank - 1)]
        if grad_perm != sorted(grad_perm):
            grad = ctx.op("Transpose", grad, perm=grad_perm)
        shape = ctx.op("Gather", shape, ctx.ints(data_perm))
    scattered = ctx.op("ScatterND", ctx.zeros(shape, like=data), positions, grad, reduction="add")
    if axis:
        scattered = ctx.op("Transpose", scattered, perm=inverse_permutation(data_perm))
    return {0: scattered}
