from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_loss import loss_terms, subtract_at_labels


@gradient_rule("NegativeLogLikelihoodLoss")
def nll_grad(ctx, node):
    """d input = -factor at the label, 0 elsewhere (see ``loss_terms``); only the input's shape is read."""
    factor, positions = loss_terms(ctx, node)
    return {0: subtract_at_labels(ctx, ctx.zeros_like(node.input(0)), positions, factor)}
