import numpy as np
import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


# Ratio 0 only: onnxruntime's random masks are not torch's, so only an inactive dropout matches eager.
@gradient_rule("Dropout", samples=(Sample(lambda x: F.dropout(x, 0.0) * 2.0, (normal(3, 4),), name="ratio_zero"),))
def dropout_grad(ctx, node):
    """dx = dy·mask / (1 - ratio) in training mode, dy otherwise (or when ratio is 0).

    The mask is the forward node's own optional output (added when the export omitted it) and is
    stashed, so backward drops exactly what forward dropped.
    """
    x, grad = node.input(0), node.grad()
    training = ctx.constant_value(node.input(2)) if node.input(2) else np.array(False)
    ratio = ctx.constant_value(node.input(1)) if node.input(1) else np.array(0.5)
    if (training is not None and not training.item()) or (ratio is not None and ratio.item() == 0):
        return {0: grad}
    mask = ctx.forward_output(node.proto, 1)
    if ratio is not None:
        scale = ctx.scalar(1 / (1 - ratio.item()), like=x)
    else:
        rate = ctx.forward(node.input(1))
        if ctx.elem_type(node.input(1)) != ctx.elem_type(x):
            rate = ctx.op("Cast", rate, to=ctx.elem_type(x))
        one = ctx.scalar(1, like=x)
        scale = ctx.div(one, ctx.sub(one, rate))
    if training is None:
        scale = ctx.op("Where", ctx.forward(node.input(2)), scale, ctx.scalar(1, like=x))
    return {0: ctx.op("Where", mask, ctx.mul(grad, scale), ctx.scalar(0, like=x))}
