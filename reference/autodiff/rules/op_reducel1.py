from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import expand_to_input
from reference.autodiff.samples import Sample, away_from_zero


@gradient_rule("ReduceL1", samples=(
    Sample(lambda x: x.norm(p=1, dim=1), (away_from_zero(3, 4),), more=((away_from_zero(2, 5),),), name="axis"),
    Sample(lambda x: x.norm(p=1, dim=0, keepdim=True), (away_from_zero(3, 4),),
           more=((away_from_zero(2, 5),),), name="keepdims"),
))
def reduce_l1_grad(ctx, node):
    """y = Σ |x| over the axes: dx = sign(x) dy (0 at x = 0, PyTorch's subgradient)."""
    return {0: ctx.mul(ctx.op("Sign", ctx.forward(node.input(0))), expand_to_input(ctx, node, node.grad()))}
