import math

import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, normal


_TANH_K0 = math.sqrt(2 / math.pi)
_TANH_K1 = 0.044715


@gradient_rule("Gelu", samples=(
    Sample(F.gelu, (normal(3, 4, dtype=F32),), more=((normal(2, 5, dtype=F32),),), name="exact"),
))
def gelu_grad(ctx, node):
    """Exact: dx = dy·(Phi(x) + x phi(x)), as ½dy·((1 + erf(t)) + (2/√π)·t/exp(t²)) with t = x/√2: the
    ½ on dy (a power of two, which the fuse stage folds into the product that computed dy), and one
    scaled x serving erf, the exponent and the numerator: nine kernels, where the plain formula took
    eleven. t/exp(t²) is t·exp(-t²) without a negation (0 where exp(t²) overflows, as it should be).
    Adds, not one three-input Sum: onnxruntime's Sum broadcasting the scalar was measured 3-4x
    slower than two Adds. Tanh form: with t = tanh(k0 (x + k1 x³)),
    dy·(0.5 (1 + t) + 0.5 x (1 - t²) k0 (1 + 3 k1 x²))."""
    name = node.input(0)
    x = ctx.forward(name)

    def c(value):
        return ctx.scalar(value, like=name)

    if node.attr("approximate") == "tanh":
        return {0: ctx.mul(node.grad(), _tanh_derivative(ctx, x, c))}
    t = ctx.mul(x, c(1 / math.sqrt(2)))
    density = ctx.div(t, ctx.op("Exp", ctx.mul(t, t)))
    twice = ctx.add(ctx.add(ctx.op("Erf", t), c(1)), ctx.mul(density, c(2 / math.sqrt(math.pi))))
    return {0: ctx.mul(ctx.mul(node.grad(), c(0.5)), twice)}


def _tanh_derivative(ctx, x, c):
    x2 = ctx.mul(x, x)
    t = ctx.op("Tanh", ctx.mul(ctx.mul(x, ctx.add(ctx.mul(x2, c(_TANH_K1)), c(1))), c(_TANH_K0)))
    left = ctx.add(ctx.mul(t, c(0.5)), c(0.5))
    one_minus_t2 = ctx.sub(c(1), ctx.mul(t, t))
    inner_slope = ctx.add(ctx.mul(x2, c(3 * _TANH_K1 * 0.5 * _TANH_K0)), c(0.5 * _TANH_K0))
    return ctx.add(left, ctx.mul(ctx.mul(x, one_minus_t2), inner_slope))
