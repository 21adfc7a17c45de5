from reference.autodiff.registry import gradient_rule


@gradient_rule("GatherElements")
def gather_elements_grad(ctx, node):
    """Scatter-add dy into zeros at the gathered positions (indices may repeat)."""
    data = node.input(0)
    scattered = ctx.op(
        "ScatterElements", ctx.zeros_like(data), ctx.forward(node.input(1)), node.grad(),
        axis=node.attr("axis"), reduction="add",
    )
    return {0: scattered}
