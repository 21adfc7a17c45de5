from reference.autodiff.errors import UnsupportedOpError
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, away_from_zero


@gradient_rule("GatherND", samples=(
    Sample(lambda x: x[x > 0] * 3, (away_from_zero(3, 4),), more=((away_from_zero(2, 5),),), name="boolean_mask"),
))
def gather_nd_grad(ctx, node):
    """dy scatter-added into zeros of x's shape at the gathered indices (an index read twice gets both
    gradients, as eager's index backward accumulates)."""
    if node.attr("batch_dims"):
        raise UnsupportedOpError("GatherND(batch_dims > 0)", node.name, ["GatherND(batch_dims=0)"])
    x = node.input(0)
    return {0: ctx.op("ScatterND", ctx.zeros(ctx.shape(x), like=x), ctx.forward(node.input(1)), node.grad(),
                      reduction="add")}
