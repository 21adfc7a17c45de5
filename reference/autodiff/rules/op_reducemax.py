from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import extremum_reduction_grad
from reference.autodiff.samples import Sample, distinct


gradient_rule("ReduceMax", samples=(
    Sample(lambda x: x.amax(dim=1), (distinct(3, 4),), more=((distinct(2, 5),),), name="axis"),
    Sample(lambda x: x.amax(dim=(0, 2), keepdim=True), (distinct(2, 3, 4),),
           more=((distinct(1, 2, 5),),), name="keepdims"),
))(extremum_reduction_grad)
