from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("Cast", samples=(
    Sample(lambda x: (x.float() * 2).double(), (normal(3, 4),), more=((normal(2, 5),),)),
))
def cast_grad(ctx, node):
    """Float-to-float casts pass dy back in the input's type (other casts carry no gradient:
    their outputs or inputs are not float, so they are never asked)."""
    source = ctx.elem_type(node.input(0))
    if source == ctx.elem_type(node.output(0)):
        return {0: node.grad()}
    return {0: ctx.op("Cast", node.grad(), to=source)}
