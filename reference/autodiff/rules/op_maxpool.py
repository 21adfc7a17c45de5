from reference.autodiff.registry import gradient_rule


@gradient_rule("MaxPool")
def max_pool_grad(ctx, node):
    """Each dy is added at the input position its window's maximum came from: the node's Indices
    output (flat over the whole input, padding not counted; added to the forward node when the
    export omitted it). Windows sharing a maximum add up, as in PyTorch."""
    x = node.input(0)
    flat = ctx.ints([-1])
    indices = ctx.op("Reshape", ctx.forward_output(node.proto, 1), flat)
    zeros = ctx.op("Reshape", ctx.zeros_like(x), flat)
    summed = ctx.op("ScatterElements", zeros, indices, ctx.op("Reshape", node.grad(), flat), axis=0, reduction="add")
    return {0: ctx.op("Reshape", summed, ctx.shape(x))}
