import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import normalization_statistics, normalized_input_grad
from reference.autodiff.samples import F32, Sample, normal


@gradient_rule("InstanceNormalization", samples=(
    Sample(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
           (normal(2, 3, 5, dtype=F32), normal(3, dtype=F32), normal(3, dtype=F32)), wrt=(0, 1, 2),
           more=((normal(1, 3, 7, dtype=F32), normal(3, dtype=F32), normal(3, dtype=F32)),)),
))
def instance_norm_grad(ctx, node):
    """LayerNormalization's formula per (sample, channel) over the spatial axes, with the channel's
    scale: x̂ = (x - mean)·inv_std, g = dy·scale, dx = inv_std·(g - mean(g) - x̂·mean(g·x̂)),
    dscale = Σ dy·x̂ and dB = Σ dy over the batch and spatial axes. The statistics are recomputed
    here (the op has no outputs for them)."""
    x, grad = node.input(0), node.grad()
    rank = ctx.rank(x)
    spatial, per_channel = ctx.ints(range(2, rank)), ctx.ints([0, *range(2, rank)])
    grads = {}
    if node.wants(2):
        grads[2] = ctx.op("ReduceSum", grad, per_channel, keepdims=0)
    if not (node.wants(0) or node.wants(1)):
        return grads
    x_hat, inv_std = normalization_statistics(ctx, ctx.forward(x), spatial, node.attr("epsilon"))
    if node.wants(1):
        grads[1] = ctx.op("ReduceSum", ctx.mul(grad, x_hat), per_channel, keepdims=0)
    if node.wants(0):
        scale = ctx.op("Unsqueeze", ctx.forward(node.input(1)), ctx.ints([0, *range(2, rank)]))
        grads[0] = normalized_input_grad(ctx, ctx.mul(grad, scale), x_hat, inv_std, spatial)
    return grads
