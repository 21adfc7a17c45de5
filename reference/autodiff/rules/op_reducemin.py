from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import extremum_reduction_grad

gradient_rule("ReduceMin")(extremum_reduction_grad)
