import math

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import unary

_TANH_K0 = math.sqrt(2 / math.pi)
_TANH_K1 = 0.044715


@gradient_rule("Gelu")
@unary
def gelu_derivative(ctx, node):
    """Exact: Phi(x) + x phi(x). Tanh form: with t = tanh(k0 (x + k1 x³)),
    0.5 (1 + t) + 0.5 x (1 - t²) k0 (1 + 3 k1 x²)."""
    name = node.input(0)
    x = ctx.forward(name)

    def c(value):
        return ctx.scalar(value, like=name)

    x2 = ctx.mul(x, x)
    if node.attr("approximate") == "tanh":
        t = ctx.op("Tanh", ctx.mul(ctx.mul(x, ctx.add(ctx.mul(x2, c(_TANH_K1)), c(1))), c(_TANH_K0)))
        left = ctx.add(ctx.mul(t, c(0.5)), c(0.5))
        one_minus_t2 = ctx.sub(c(1), ctx.mul(t, t))
        inner_slope = ctx.add(ctx.mul(x2, c(3 * _TANH_K1 * 0.5 * _TANH_K0)), c(0.5 * _TANH_K0))
        return ctx.add(left, ctx.mul(ctx.mul(x, one_minus_t2), inner_slope))
    cdf = ctx.add(ctx.mul(ctx.op("Erf", ctx.mul(x, c(1 / math.sqrt(2)))), c(0.5)), c(0.5))
    x_pdf = ctx.mul(ctx.op("Exp", ctx.mul(x2, c(-0.5))), ctx.mul(x, c(1 / math.sqrt(2 * math.pi))))
    return ctx.add(cdf, x_pdf)
