import torch
import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import log_softmax_backward
from reference.autodiff.rules.common_loss import loss_terms, subtract_at_labels
from reference.autodiff.samples import Sample, fixed, normal


def _cross_entropy(name: str, **options) -> Sample:
    return Sample(lambda x, t: F.cross_entropy(x, t, **options), (normal(5, 4), fixed([0, 2, 3, 2, 1])),
                  more=((normal(3, 4), fixed([1, 2, 2])),), name=name)


@gradient_rule("SoftmaxCrossEntropyLoss", samples=(
    _cross_entropy("mean"), _cross_entropy("sum", reduction="sum"), _cross_entropy("none", reduction="none"),
    _cross_entropy("ignore_index", ignore_index=2),
    _cross_entropy("class_weights", weight=torch.tensor([1.0, 2.0, 0.5, 3.0], dtype=torch.float64)),
))
def softmax_cross_entropy_grad(ctx, node):
    """d scores = softmax·factor, minus factor at the label (see ``loss_terms``).

    Softmax is exp of the node's log_prob output (added to the forward node when the export omitted
    it), so backward does not recompute the normalizer.
    """
    log_probs = ctx.forward_output(node.proto, 1)
    grad = None
    if node.grad(0):
        factor, positions = loss_terms(ctx, node)
        grad = subtract_at_labels(ctx, ctx.mul(ctx.op("Exp", log_probs), factor), positions, factor)
    if node.grad(1):
        from_log_probs = log_softmax_backward(ctx, node.grad(1), log_probs, axis=1)
        grad = from_log_probs if grad is None else ctx.add(grad, from_log_probs)
    return {0: grad}
