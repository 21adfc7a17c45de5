import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, away_from_zero


@gradient_rule("LeakyRelu", samples=(
    Sample(lambda x: F.leaky_relu(x, 0.1), (away_from_zero(3, 4, dtype=F32),),
           more=((away_from_zero(2, 5, dtype=F32),),)),
))
def leaky_relu_grad(ctx, node):
    """dx = dy where x > 0, else alpha dy (PyTorch's convention: alpha at 0)."""
    x = node.input(0)
    alpha = node.attr("alpha")
    positive = ctx.op("Greater", ctx.forward(x), ctx.scalar(0, like=x))
    return {0: ctx.op("Where", positive, node.grad(), ctx.mul(node.grad(), ctx.scalar(alpha, like=x)))}
