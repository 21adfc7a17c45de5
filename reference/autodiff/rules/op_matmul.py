import torch

from reference.autodiff.broadcast import reduce_to_shape
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("MatMul", samples=(
    Sample(torch.matmul, (normal(2, 3, 4), normal(2, 4, 5)), wrt=(0, 1),
           more=((normal(3, 2, 4), normal(3, 4, 1)),), name="batched"),
    Sample(torch.matmul, (normal(2, 1, 3, 4), normal(5, 4, 2)), wrt=(0, 1),
           more=((normal(1, 3, 2, 4), normal(1, 4, 2)),), name="broadcast_batch"),
    Sample(torch.matmul, (normal(4), normal(2, 4, 5)), wrt=(0, 1),
           more=((normal(3), normal(1, 3, 2)),), name="vector_times_batch"),
))
def matmul_grad(ctx, node):
    """dA = dY·Bᵀ and dB = Aᵀ·dY, summed over the batch axes the operand was broadcast along.

    A 2-D B (a Linear layer) takes a fast path: dB is one GEMM over the flattened batch, and dA
    needs no reduction. 1-D operands are promoted to matrices as MatMul does, then squeezed back.
    """
    a, b = node.input(0), node.input(1)
    rank_a, rank_b = ctx.rank(a), ctx.rank(b)
    if rank_b == 2 and rank_a >= 2:
        return _linear_grads(ctx, node, rank_a)
    dims_a, dims_b, dims_y = ctx.dims(a), ctx.dims(b), list(ctx.dims(node.output(0)))
    grad = node.grad()
    if rank_b == 1:
        grad, dims_b, dims_y = ctx.op("Unsqueeze", grad, ctx.ints([-1])), dims_b + [1], dims_y + [1]
    if rank_a == 1:
        grad, dims_a, dims_y = ctx.op("Unsqueeze", grad, ctx.ints([-2])), [1] + dims_a, dims_y[:-1] + [1, dims_y[-1]]
    batch = dims_y[:-2]
    grads = {}
    if node.wants(0):
        product = ctx.op("MatMul", grad, _swap_last_two(ctx, _promoted(ctx, b, rank_b, -1), len(dims_b)))
        grads[0] = _unpromote_and_reduce(ctx, product, batch + dims_a[-2:], a, rank_a, -2)
    if node.wants(1):
        product = ctx.op("MatMul", _swap_last_two(ctx, _promoted(ctx, a, rank_a, 0), len(dims_a)), grad)
        grads[1] = _unpromote_and_reduce(ctx, product, batch + dims_b[-2:], b, rank_b, -1)
    return grads


def _linear_grads(ctx, node, rank_a: int) -> dict[int, str]:
    grad, grads = node.grad(), {}
    untransposed = _transpose_source(ctx, node.input(1))
    if node.wants(0) and untransposed is not None:
        # B = Wᵀ (how Linear exports on 3-D inputs): dA = dY·W reads the parameter itself, so Wᵀ is
        # not stashed and onnxruntime may fuse the forward Transpose into the MatMul.
        weight = ctx.forward(untransposed)
        grads[0] = ctx.op("Gemm" if rank_a == 2 else "MatMul", grad, weight)
    elif node.wants(0):
        weight = ctx.forward(node.input(1))
        if rank_a == 2:
            grads[0] = ctx.op("Gemm", grad, weight, transB=1)
        else:
            grads[0] = ctx.op("MatMul", grad, ctx.op("Transpose", weight, perm=[1, 0]))
    if node.wants(1):
        rows_a, rows_grad = ctx.forward(node.input(0)), grad
        if rank_a > 2:
            rows_a = ctx.op("Flatten", rows_a, axis=rank_a - 1)
            rows_grad = ctx.op("Flatten", grad, axis=rank_a - 1)
        grads[1] = ctx.op("Gemm", rows_a, rows_grad, transA=1)
    return grads


def _transpose_source(ctx, name: str) -> str | None:
    """W when ``name`` is a plain 2-D Transpose(W), else None."""
    producer = ctx.forward_model.producer(name)
    if producer is None or producer.op_type != "Transpose" or ctx.rank(producer.input[0]) != 2:
        return None
    perm = [list(a.ints) for a in producer.attribute if a.name == "perm"]
    return producer.input[0] if perm in ([], [[1, 0]]) else None


def _promoted(ctx, name: str, rank: int, axis: int) -> str:
    value = ctx.forward(name)
    return ctx.op("Unsqueeze", value, ctx.ints([axis])) if rank == 1 else value


def _swap_last_two(ctx, value: str, rank: int) -> str:
    perm = [*range(rank - 2), rank - 1, rank - 2]
    return ctx.op("Transpose", value, perm=perm)


def _unpromote_and_reduce(ctx, product: str, dims: list, target: str, rank: int, axis: int) -> str:
    if rank == 1:
        product = ctx.op("Squeeze", product, ctx.ints([axis]))
        dims = dims[:axis] + (dims[axis + 1:] if axis != -1 else [])
    return reduce_to_shape(ctx, product, dims, target)
