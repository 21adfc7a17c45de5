import math

from reference.autodiff.registry import gradient_rule

_TANH_K0 = math.sqrt(2 / math.pi)
_TANH_K1 = 0.044715


@gradient_rule("Gelu")
def gelu_grad(ctx, node):
    """Exact: dx = dy·(Phi(x) + x phi(x)), as ½dy·((1 + erf(x/√2)) + √(2/π)·x·exp(-x²/2)): the ½ on dy
    (a power of two, which the fuse stage folds into the product that computed dy): ten kernels
    then, where the plain formula took eleven; -x²/2 as (-x/2)·x, rounded once as x·x is. Adds, not one
    three-input Sum: onnxruntime's Sum broadcasting the scalar was measured 3-4x slower than two Adds.
    Tanh form: with t = tanh(k0 (x + k1 x³)), dy·(0.5 (1 + t) + 0.5 x (1 - t²) k0 (1 + 3 k1 x²))."""
    name = node.input(0)
    x = ctx.forward(name)

    def c(value):
        return ctx.scalar(value, like=name)

    if node.attr("approximate") == "tanh":
        return {0: ctx.mul(node.grad(), _tanh_derivative(ctx, x, c))}
    exp = ctx.op("Exp", ctx.mul(ctx.mul(x, c(-0.5)), x))
    twice = ctx.add(ctx.add(ctx.op("Erf", ctx.mul(x, c(1 / math.sqrt(2)))), c(1)),
                    ctx.mul(ctx.mul(x, c(math.sqrt(2 / math.pi))), exp))
    return {0: ctx.mul(ctx.mul(node.grad(), c(0.5)), twice)}


def _tanh_derivative(ctx, x, c):
    x2 = ctx.mul(x, x)
    t = ctx.op("Tanh", ctx.mul(ctx.mul(x, ctx.add(ctx.mul(x2, c(_TANH_K1)), c(1))), c(_TANH_K0)))
    left = ctx.add(ctx.mul(t, c(0.5)), c(0.5))
    one_minus_t2 = ctx.sub(c(1), ctx.mul(t, t))
    inner_slope = ctx.add(ctx.mul(x2, c(3 * _TANH_K1 * 0.5 * _TANH_K0)), c(0.5 * _TANH_K0))
    return ctx.add(left, ctx.mul(ctx.mul(x, one_minus_t2), inner_slope))
