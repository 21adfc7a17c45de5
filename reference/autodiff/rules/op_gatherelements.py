import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, fixed, normal


@gradient_rule("GatherElements", samples=(
    Sample(lambda x, i: torch.gather(x, 1, i), (normal(3, 4), fixed([[0, 0], [3, 1], [2, 2]]))),
))
def gather_elements_grad(ctx, node):
    """Scatter-add dy into zeros at the gathered positions (indices may repeat)."""
    data = node.input(0)
    scattered = ctx.op(
        "ScatterElements", ctx.zeros_like(data), ctx.forward(node.input(1)), node.grad(),
        axis=node.attr("axis"), reduction="add",
    )
    return {0: scattered}
