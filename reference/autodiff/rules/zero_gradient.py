"""Sign, the rounding ops and Bernoulli: their derivative is zero almost everywhere (Bernoulli's draw
does not move with its probabilities), and PyTorch's backward says so with zeros, not with no
gradient (an input reached only through ``floor`` gets a zero gradient in eager, which an optimizer
with weight decay or momentum treats unlike none; and the output requires grad)."""
from reference.autodiff.registry import gradient_rule


def zero_grad(ctx, node):
    return {0: ctx.zeros_like(node.input(0))}


for _op_type in ("Sign", "Floor", "Ceil", "Round", "Bernoulli"):
    gradient_rule(_op_type)(zero_grad)
