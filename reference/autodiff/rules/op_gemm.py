from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule


@gradient_rule("Gemm")
def gemm_grad(ctx, node):
    """Y = alpha·op(A)·op(B) + beta·C. Each operand's gradient is one Gemm whose trans flags absorb
    op(): dA = alpha·dY·op(B)ᵀ (transposed if transA), dB = alpha·op(A)ᵀ·dY (transposed if transB)."""
    alpha, beta = node.attr("alpha"), node.attr("beta")
    trans_a, trans_b = node.attr("transA"), node.attr("transB")
    grad, grads = node.grad(), {}
    if node.wants(0):
        b = ctx.forward(node.input(1))
        if trans_a:
            grads[0] = ctx.op("Gemm", b, grad, alpha=alpha, transA=trans_b, transB=1)
        else:
            grads[0] = ctx.op("Gemm", grad, b, alpha=alpha, transB=1 - trans_b)
    if node.wants(1):
        a = ctx.forward(node.input(0))
        if trans_b:
            grads[1] = ctx.op("Gemm", grad, a, alpha=alpha, transA=1, transB=trans_a)
        else:
            grads[1] = ctx.op("Gemm", a, grad, alpha=alpha, transA=1 - trans_a)
    if node.wants(2):
        scaled = grad if beta == 1 else ctx.mul(grad, ctx.scalar(beta, like=node.output(0)))
        grads[2] = reduce_to_input(ctx, node, 2, scaled)
    return grads
