"""Sign, the rounding ops and Bernoulli: their derivative is zero almost everywhere (Bernoulli's draw
does not move with its probabilities), and PyTorch's backward says so with zeros, not with no
gradient (an input reached only through ``floor`` gets a zero gradient in eager, which an optimizer
with weight decay or momentum treats unlike none; and the output requires grad)."""

import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, away_from_zero, normal


def zero_grad(ctx, node):
    return {0: ctx.zeros_like(node.input(0))}


def _times_input(op):
    """``op(x) * x``: the product's other factor shows the zero gradient through ``op`` is no missing one."""
    return Sample(lambda x: op(x) * x, (normal(3, 4, scale=3.0),), more=((normal(2, 5, scale=3.0),),))


SAMPLES = {
    "Sign": (Sample(lambda x: torch.sign(x) * x, (away_from_zero(3, 4),), more=((away_from_zero(2, 5),),)),),
    "Floor": (_times_input(torch.floor),),
    "Ceil": (_times_input(torch.ceil),),
    "Round": (_times_input(torch.round),),
    "Bernoulli": (),  # a random draw: onnxruntime's and torch's differ (test_rule_samples.EXEMPT)
}

for _op_type, _samples in SAMPLES.items():
    gradient_rule(_op_type, samples=_samples)(zero_grad)
