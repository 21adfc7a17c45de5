from reference.autodiff.registry import gradient_rule


@gradient_rule("CumSum")
def cumsum_grad(ctx, node):
    """Each dy[i] reaches every x[j] the sum ran over: the cumulative sum of dy the other way
    along the same axis, as exclusive as the forward."""
    axis = ctx.forward(node.input(1))
    return {0: ctx.op("CumSum", node.grad(), axis, exclusive=node.attr("exclusive"),
                      reverse=1 - node.attr("reverse"))}
