import torch.nn.functional as F

from reference.autodiff.errors import UnsupportedOpError
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal, positive
from reference.export.epsilon import written_epsilon


def _eval_batch_norm(*x_shape: int) -> Sample:
    """Given statistics (eval); torch differentiates neither statistic, so only x, scale and bias are compared."""
    def fn(x, mean, var, scale, bias):
        return F.batch_norm(x, mean, var, scale, bias, training=False, eps=0.25)

    stats = (normal(3), positive(3), normal(3), normal(3))
    return Sample(fn, (normal(*x_shape), *stats), wrt=(0, 3, 4), name=f"rank_{len(x_shape)}")


@gradient_rule("BatchNormalization", since=9, samples=(_eval_batch_norm(4, 3), _eval_batch_norm(2, 3, 2, 4)))
def batch_norm_grad(ctx, node):
    """With the statistics as inputs (``training_mode=0``, eval), per channel (axis 1):
    y = (x - mean)·s·inv_std + B with inv_std = (var + ε)^-½ and s the scale, so
    dx = dy·s·inv_std, dscale = Σ dy·(x - mean)·inv_std, dB = Σ dy, dmean = -Σ dy·s·inv_std and
    dvar = -½·Σ dy·(x - mean)·s·inv_std³, the sums over every axis but the channel's.

    Batch statistics (``training_mode=1``) are refused by name: the reference's export computes them
    with plain ops (``reference/export/norms.py``) and never emits that form."""
    if node.attr("training_mode", 0):
        raise UnsupportedOpError("BatchNormalization(training_mode=1)", node.name, ["BatchNormalization(training_mode=0)"])
    x, grad = node.input(0), node.grad()
    rank = ctx.rank(x)
    others = ctx.ints([0, *range(2, rank)])

    def broadcast(channel_value: str) -> str:  # [C] -> [1, C, 1, ...]
        return ctx.op("Unsqueeze", channel_value, others)

    def summed(value: str) -> str:  # [N, C, ...] -> [C]
        return ctx.op("ReduceSum", value, others, keepdims=0)

    scale, mean, variance = (ctx.forward(node.input(i)) for i in (1, 3, 4))
    inv_std = ctx.op("Reciprocal", ctx.op("Sqrt", ctx.add(variance, ctx.scalar(written_epsilon(node.attr("epsilon")), like=x))))
    scaled_inv_std = ctx.mul(scale, inv_std)
    grads = {}
    if node.wants(0):
        grads[0] = ctx.mul(grad, broadcast(scaled_inv_std))
    if node.wants(2) or node.wants(3):
        grad_sum = summed(grad)
        if node.wants(2):
            grads[2] = grad_sum
        if node.wants(3):
            grads[3] = ctx.neg(ctx.mul(grad_sum, scaled_inv_std))
    if node.wants(1) or node.wants(4):
        moment = summed(ctx.mul(grad, ctx.sub(ctx.forward(x), broadcast(mean))))  # Σ dy·(x - mean)
        if node.wants(1):
            grads[1] = ctx.mul(moment, inv_std)
        if node.wants(4):
            cubed = ctx.mul(ctx.mul(inv_std, inv_std), scaled_inv_std)
            grads[4] = ctx.mul(ctx.mul(moment, cubed), ctx.scalar(-0.5, like=x))
    return grads
