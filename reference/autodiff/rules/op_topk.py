import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, distinct


@gradient_rule("TopK", samples=(
    Sample(lambda x: torch.topk(x, 2, dim=-1, largest=True).values, (distinct(3, 5, 6),),
           more=((distinct(2, 4, 6),),), name="largest"),
    Sample(lambda x: torch.topk(x, 2, dim=-1, largest=False).values, (distinct(3, 5, 6),),
           more=((distinct(2, 4, 6),),), name="smallest"),
))
def topk_grad(ctx, node):
    """The values' gradient back where each value came from (zeros elsewhere); the indices carry
    none. A mixture-of-experts router differentiates its routing weights through it."""
    if node.grad(0) is None:
        return {}
    data = node.input(0)
    scattered = ctx.op("ScatterElements", ctx.zeros_like(data), ctx.forward(node.output(1)), node.grad(0),
                       axis=node.attr("axis"), reduction="add")
    return {0: scattered}
