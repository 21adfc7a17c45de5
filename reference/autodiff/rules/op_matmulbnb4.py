import numpy as np

from reference.autodiff.registry import gradient_rule
from reference.bnb4 import QUANT_TYPES, code_values


# No samples: no plain torch function exports this op (tests/reference/autodiff/test_rule_samples.py, EXEMPT).
@gradient_rule("MatMulBnb4", domain="com.microsoft", samples=())
def matmulbnb4_grad(ctx, node):
    """dA = dY · dequant(B) ([..., N] @ [N, K]); the packed weight and absmax get none (frozen, as
    bitsandbytes' MatMul4Bit).

    The weight is dequantized with standard ops from the packed bytes and absmax, so only those are
    kept for backward. #18131 builds this product as ``MatMulBnb4(transB=0)``, which onnxruntime's
    CPU kernel computes as if transB were 1 (tests/reference/bnb4/test_matmulbnb4.py).
    """
    if not node.wants(0):
        return {}
    if node.attr("transB") == 0:
        raise NotImplementedError("MatMulBnb4 with transB=0 has no gradient rule (the export never emits it)")
    n, k, block_size = node.attr("N"), node.attr("K"), node.attr("block_size")
    return {0: ctx.op("MatMul", node.grad(), _dequantized(ctx, node, n, k, block_size))}


def _dequantized(ctx, node, n: int, k: int, block_size: int) -> str:
    """``[N, K]`` = code_book[codes] * absmax per block: high nibble first, blocks over the flat weight."""
    packed, absmax = ctx.forward(node.input(1)), ctx.forward(node.input(2))
    four = ctx.constant(np.array(4, dtype=np.uint8))
    high = ctx.op("BitShift", packed, four, direction="RIGHT")
    low = ctx.op("BitShift", ctx.op("BitShift", packed, four, direction="LEFT"), four, direction="RIGHT")
    pairs = ctx.op("Concat", ctx.op("Unsqueeze", high, ctx.ints([1])), ctx.op("Unsqueeze", low, ctx.ints([1])), axis=1)
    codes = ctx.op("Cast", _first(ctx, ctx.op("Reshape", pairs, ctx.ints([-1])), n * k), to=7)  # INT64
    table = code_values(QUANT_TYPES[node.attr("quant_type")]).numpy().astype(ctx.np_dtype(node.input(2)))
    values = ctx.op("Gather", ctx.constant(table), codes, axis=0)
    blocks = -(-n * k // block_size)
    scales = ctx.op("Expand", ctx.op("Unsqueeze", absmax, ctx.ints([1])), ctx.ints([blocks, block_size]))
    scales = _first(ctx, ctx.op("Reshape", scales, ctx.ints([-1])), n * k)
    return ctx.op("Reshape", ctx.mul(values, scales), ctx.ints([n, k]))


def _first(ctx, flat: str, count: int) -> str:
    return ctx.op("Slice", flat, ctx.ints([0]), ctx.ints([count]), ctx.ints([0]))
