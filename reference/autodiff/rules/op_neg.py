from reference.autodiff.registry import gradient_rule


@gradient_rule("Neg")
def neg_grad(ctx, node):
    return {0: ctx.neg(node.grad())}
