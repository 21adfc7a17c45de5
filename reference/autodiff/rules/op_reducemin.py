from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import extremum_reduction_grad
from reference.autodiff.samples import Sample, distinct


gradient_rule("ReduceMin", samples=(
    Sample(lambda x: x.amin(dim=1), (distinct(3, 4),), more=((distinct(2, 5),),), name="axis"),
    Sample(lambda x: x.amin(), (distinct(2, 3, 4),), more=((distinct(1, 2, 5),),), name="all"),
))(extremum_reduction_grad)
