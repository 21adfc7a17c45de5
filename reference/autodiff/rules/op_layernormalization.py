import torch.nn.functional as F

from reference.autodiff.broadcast import reduce_to_shape
from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import normalization_statistics, normalized_input_grad
from reference.autodiff.samples import Sample, normal


@gradient_rule("LayerNormalization", samples=(
    Sample(lambda x, w, b: F.layer_norm(x, (3, 4), w, b), (normal(2, 3, 4), normal(3, 4), normal(3, 4)), wrt=(0, 1, 2),
           more=((normal(1, 3, 4), normal(3, 4), normal(3, 4)),), name="affine"),
    Sample(lambda x: F.layer_norm(x, (4,)), (normal(2, 3, 4),), more=((normal(1, 2, 4),),), name="plain"),
))
def layer_norm_grad(ctx, node):
    """With x̂ = (x - mean)·inv_std over the normalized axes and g = dy·scale:
    dx = inv_std·(g - mean(g) - x̂·mean(g·x̂)), dscale = Σ dy·x̂, dbias = Σ dy over the other axes.

    x̂ and inv_std come from the stashed input with a two-pass variance
    (:func:`normalization_statistics`), not from the node's optional Mean/InvStdDev outputs:
    onnxruntime computes those as E[x²] - mean², hundreds of ulp off where the mean dominates, and
    over few features dx is a near-cancellation that would keep all of it (LayerNorm over 2 features).
    """
    x, dims_y, grad = node.input(0), ctx.dims(node.output(0)), node.grad()
    grads = {}
    if node.wants(2):
        grads[2] = reduce_to_shape(ctx, grad, dims_y, node.input(2))
    if not (node.wants(0) or node.wants(1)):
        return grads
    rank = ctx.rank(x)
    axes = ctx.ints(range(node.attr("axis") % rank, rank))
    x_hat, inv_std = normalization_statistics(ctx, ctx.forward(x), axes, node.attr("epsilon"))
    if node.wants(1):
        grads[1] = reduce_to_shape(ctx, ctx.mul(grad, x_hat), dims_y, node.input(1))
    if node.wants(0):
        grads[0] = normalized_input_grad(ctx, ctx.mul(grad, ctx.forward(node.input(1))), x_hat, inv_std, axes)
    return grads
