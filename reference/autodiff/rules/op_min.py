import torch

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import extremum_grads
from reference.autodiff.samples import Sample, distinct


gradient_rule("Min", samples=(
    Sample(torch.minimum, (distinct(3, 1, 4), distinct(2, 4)), wrt=(0, 1),
           more=((distinct(2, 1, 3), distinct(5, 3)),), name="broadcast"),
))(extremum_grads)
