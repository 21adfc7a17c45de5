import torch
import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_loss import loss_terms, subtract_at_labels
from reference.autodiff.samples import Sample, fixed, normal


def _nll_of_tanh(name: str, **options) -> Sample:
    return Sample(lambda x, t: F.nll_loss(torch.tanh(x), t, **options), (normal(4, 3), fixed([0, 2, 1, 0])), name=name)


@gradient_rule("NegativeLogLikelihoodLoss", samples=(
    _nll_of_tanh("mean"), _nll_of_tanh("sum_ignore_index", reduction="sum", ignore_index=0),
    _nll_of_tanh("class_weights", weight=torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)),
))
def nll_grad(ctx, node):
    """d input = -factor at the label, 0 elsewhere (see ``loss_terms``); only the input's shape is read."""
    factor, positions = loss_terms(ctx, node)
    return {0: subtract_at_labels(ctx, ctx.zeros_like(node.input(0)), positions, factor)}
