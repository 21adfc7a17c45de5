import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import normalized_axis
from reference.autodiff.samples import Sample, normal


@gradient_rule("Concat", samples=(
    Sample(lambda x, y: torch.cat([x, y, x], dim=1) * 1.0, (normal(2, 3), normal(2, 1)), wrt=(0, 1),
           more=((normal(1, 2), normal(1, 4)),)),
))
def concat_grad(ctx, node):
    """Split dy back into the inputs' sizes along the axis (sizes read at run time)."""
    if node.num_inputs == 1:
        return {0: node.grad()}
    axis = normalized_axis(ctx, node, node.output(0))
    inputs = [node.input(i) for i in range(node.num_inputs)]
    sizes = ctx.op("Concat", *[ctx.dim_size(name, axis) for name in inputs], axis=0)
    parts = ctx.emit("Split", [node.grad(), sizes], num_outputs=len(inputs), axis=axis)
    return {i: parts[i] for i in node.wanted_inputs}
