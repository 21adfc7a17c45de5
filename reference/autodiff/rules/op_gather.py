import numpy as np

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import inverse_permutation
from reference.autodiff.samples import Sample, fixed, normal
from reference.export.embeddings import embedding_options


@gradient_rule("Gather", samples=(
    Sample(lambda x: x[:, 1] * 1.0, (normal(3, 4, 2),), more=((normal(2, 5, 2),),), name="select_axis_1"),
    Sample(lambda x, i: x[:, i] * 1.0, (normal(3, 4, 5), fixed([[0, 2], [2, 2]])), name="repeated_indices"),
    Sample(lambda x: x[-1] * 1.0, (normal(3, 4),), more=((normal(5, 2),),), name="negative_axis_0"),
))
def gather_grad(ctx, node):
    """Scatter-add dy into zeros shaped like the data, so repeated ids (embeddings) accumulate.

    ScatterND indexes leading axes, so a gather along another axis scatters into a transposed view.
    What the export recorded of an embedding (``reference.export.embeddings``): its padding row
    gets no gradient, and with ``scale_grad_by_freq`` each lookup's dy is divided by how often the
    batch looks that row up.
    """
    data, indices = node.input(0), node.input(1)
    rank, index_rank = ctx.rank(data), ctx.rank(indices)
    axis = node.attr("axis") % rank
    positions = ctx.op("Unsqueeze", ctx.forward(indices), ctx.ints([-1]))
    grad, shape = node.grad(), ctx.shape(data)
    options = embedding_options(ctx.forward_model.model, node.name) if axis == 0 else None
    padding = options.padding_idx if options else None
    if options and options.scale_grad_by_freq:
        grad = ctx.div(grad, _lookup_counts(ctx, node, index_rank, rank))
    if padding is not None:
        is_padding = ctx.op("Equal", ctx.forward(indices), ctx.op("CastLike", ctx.constant(np.array(padding, dtype=np.int64)), ctx.forward(indices)))
        is_padding = ctx.op("Unsqueeze", is_padding, ctx.ints(list(range(index_rank, index_rank + rank - 1))))
        grad = ctx.op("Where", is_padding, ctx.scalar(0, like=data), grad)
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


def _lookup_counts(ctx, node, index_rank: int, rank: int) -> str:
    """Per lookup, how many lookups of the batch read the same row (shaped to divide dy)."""
    data, indices = node.input(0), ctx.forward(node.input(1))
    rows = ctx.op("Gather", ctx.shape(data), ctx.ints([0]))
    ones = ctx.op("CastLike", ctx.op("ConstantOfShape", ctx.op("Shape", indices)), ctx.scalar(0, like=data))
    ones = ctx.op("Add", ones, ctx.scalar(1, like=data))
    counts = ctx.op("ScatterND", ctx.zeros(rows, like=data), ctx.op("Unsqueeze", indices, ctx.ints([-1])), ones,
                    reduction="add")
    per_lookup = ctx.op("Gather", counts, indices)
    return ctx.op("Unsqueeze", per_lookup, ctx.ints(list(range(index_rank, index_rank + rank - 1))))
