from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import extremum_grads

gradient_rule("Max")(extremum_grads)
