from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import reshape_to_input
from reference.autodiff.samples import Sample, normal


gradient_rule("Reshape", samples=(
    Sample(lambda x: x.reshape(x.shape[0], -1, 2).transpose(1, 2) * 1.0, (normal(2, 3, 4),),
           more=((normal(1, 2, 5),),)),
))(reshape_to_input)
