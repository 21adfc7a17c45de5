from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import expand_to_input


@gradient_rule("ReduceL1")
def reduce_l1_grad(ctx, node):
    """y = Σ |x| over the axes: dx = sign(x) dy (0 at x = 0, PyTorch's subgradient)."""
    return {0: ctx.mul(ctx.op("Sign", ctx.forward(node.input(0))), expand_to_input(ctx, node, node.grad()))}
