import torch

from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal, positive


@gradient_rule("Pow", samples=(
    Sample(torch.pow, (positive(2, 3), normal(3)), wrt=(0, 1),
           more=((positive(4, 2), normal(2)),), name="tensor_exponent"),
    Sample(lambda x: x ** 3, (normal(2, 3),), more=((normal(1, 4),),), name="constant_exponent"),
))
def pow_grad(ctx, node):
    """y = A ** B: dA = dy * B * A ** (B - 1), dB = dy * y * log(A).

    A constant exponent (x ** 2, x ** 0.5 from PyTorch) is folded at build time: x ** 2 costs two Muls.
    """
    base, exponent = node.input(0), node.input(1)
    grads = {}
    if node.wants(0):
        constant = ctx.constant_value(exponent)
        x = ctx.forward(base)
        if constant is not None and constant.size == 1:
            power = float(constant.reshape(()))
            slope = x if power == 2 else ctx.op("Pow", x, ctx.scalar(power - 1, like=base))
            factor = ctx.mul(slope, ctx.scalar(power, like=base))
        else:
            b = ctx.forward(exponent)
            if ctx.elem_type(exponent) != ctx.elem_type(base):
                b = ctx.op("Cast", b, to=ctx.elem_type(base))
            factor = ctx.mul(b, ctx.op("Pow", x, ctx.sub(b, ctx.scalar(1, like=base))))
        grads[0] = reduce_to_input(ctx, node, 0, ctx.mul(node.grad(), factor))
    if node.wants(1):
        y_log_a = ctx.mul(ctx.forward(node.output(0)), ctx.op("Log", ctx.forward(base)))
        grads[1] = reduce_to_input(ctx, node, 1, ctx.mul(node.grad(), y_log_a))
    return grads
