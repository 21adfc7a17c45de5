import torch
import torch.nn.functional as F

from reference.autodiff.broadcast import reduce_to_input
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("Gemm", samples=(
    Sample(F.linear, (normal(3, 4), normal(5, 4), normal(5)), wrt=(0, 1, 2),
           more=((normal(6, 4), normal(5, 4), normal(5)),), name="linear"),
    Sample(lambda c, a, b: torch.addmm(c, a, b, alpha=2.0, beta=0.5), (normal(3, 1), normal(3, 4), normal(4, 5)),
           wrt=(0, 1, 2), name="addmm_scaled"),
))
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
