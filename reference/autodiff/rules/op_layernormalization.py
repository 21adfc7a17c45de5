from reference.autodiff.broadcast import reduce_to_shape
from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import normalized_input_grad


@gradient_rule("LayerNormalization")
def layer_norm_grad(ctx, node):
    """With x̂ = (x - mean)·inv_std over the normalized axes and g = dy·scale:
    dx = inv_std·(g - mean(g) - x̂·mean(g·x̂)), dscale = Σ dy·x̂, dbias = Σ dy over the other axes.

    Mean and inv_std are the node's optional outputs (added to the forward node when the export
    omitted them), so the backward pass re-derives nothing but x̂.
    """
    x, dims_y, grad = node.input(0), ctx.dims(node.output(0)), node.grad()
    grads = {}
    if node.wants(2):
        grads[2] = reduce_to_shape(ctx, grad, dims_y, node.input(2))
    if not (node.wants(0) or node.wants(1)):
        return grads
    mean, inv_std = (_in_type_of(ctx, node, x, ctx.forward_output(node.proto, i)) for i in (1, 2))
    x_hat = ctx.mul(ctx.sub(ctx.forward(x), mean), inv_std)
    if node.wants(1):
        grads[1] = reduce_to_shape(ctx, ctx.mul(grad, x_hat), dims_y, node.input(1))
    if node.wants(0):
        rank = ctx.rank(x)
        axes = ctx.ints(range(node.attr("axis") % rank, rank))
        grads[0] = normalized_input_grad(ctx, ctx.mul(grad, ctx.forward(node.input(1))), x_hat, inv_std, axes)
    return grads


def _in_type_of(ctx, node, x: str, statistic: str) -> str:
    """Mean/inv_std come in stash_type (float by default); bring them to x's type."""
    x_type = ctx.elem_type(x)
    return statistic if node.attr("stash_type") == x_type else ctx.op("Cast", statistic, to=x_type)
