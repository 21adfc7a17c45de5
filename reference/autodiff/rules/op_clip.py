import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("Clip", since=11, samples=(
    Sample(lambda x: x.clamp(-0.5, 0.5), (normal(3, 4),), more=((normal(2, 5),),), name="both_bounds"),
    Sample(lambda x: x.clamp(min=0.1), (normal(3, 4),), more=((normal(2, 5),),), name="min_only"),
    Sample(lambda x: x.clamp(max=-0.2), (normal(3, 4),), more=((normal(2, 5),),), name="max_only"),
    Sample(torch.clamp, (normal(3, 4), normal(shift=-0.5), normal(shift=0.5)), wrt=(0, 1, 2), name="tensor_bounds"),
))
def clip_grad(ctx, node):
    """dy flows to x where min <= x <= max (PyTorch's clamp: through both bounds, not past them; NaN
    gets none), to a bound where x passed it (summed: the bounds are scalars). ``ReLU6``,
    ``Hardtanh`` and ``clamp`` export to this."""
    x, grad = ctx.forward(node.input(0)), node.grad()
    zero = ctx.scalar(0, like=node.input(0))
    low, high = (ctx.forward(node.input(i)) if node.input(i) else None for i in (1, 2))
    inside = [ctx.op("GreaterOrEqual", x, low)] if low else []
    inside += [ctx.op("LessOrEqual", x, high)] if high else []
    if len(inside) == 2:
        inside = [ctx.op("And", *inside)]
    grads = {}
    if node.wants(0):
        grads[0] = ctx.op("Where", inside[0], grad, zero) if inside else ctx.op("Identity", grad)
    for index, bound, passed in ((1, low, "Less"), (2, high, "Greater")):
        if node.wants(index) and bound:
            grads[index] = ctx.op("ReduceSum", ctx.op("Where", ctx.op(passed, x, bound), grad, zero), keepdims=0)
    return grads
