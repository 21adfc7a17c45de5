"""Helpers several rules share, so each formula is written once."""
from __future__ import annotations

from typing import Callable

from onnx import TensorProto

from reference.autodiff.context import GradientContext
from reference.autodiff.grad_node import GradNode
from reference.autodiff.registry import Rule
from reference.export.epsilon import written_epsilon


def unary(derivative: Callable[[GradientContext, GradNode], str]) -> Rule:
    """Rule for elementwise y = f(x) from f'(x): dx = dy * f'(x)."""

    def rule(ctx: GradientContext, node: GradNode) -> dict[int, str]:
        return {0: ctx.mul(node.grad(), derivative(ctx, node))}

    rule.__doc__ = derivative.__doc__
    rule.__name__ = derivative.__name__
    return rule


def reshape_to_input(ctx: GradientContext, node: GradNode) -> dict[int, str]:
    """Gradient of any op that only rearranges metadata: reshape dy back to the input's shape
    (``allowzero``: a zero-size dimension is a size, not "copy this dimension")."""
    return {0: ctx.op("Reshape", node.grad(), ctx.shape(node.input(0)), allowzero=1)}


def axes_input(ctx: GradientContext, node: GradNode, index: int = 1) -> str | None:
    """The node's axes as a backward value: input ``index`` (opset >= 13/18) or the older attribute."""
    if node.input(index):
        return ctx.forward(node.input(index))
    axes = node.attr("axes")
    return ctx.ints(axes) if axes is not None else None


def log_softmax_backward(ctx: GradientContext, grad: str, log_probs: str, axis: int) -> str:
    """dx = dy - softmax(x) * sum(dy) for y = log_softmax(x); ``log_probs`` is y, read in backward."""
    total = ctx.op("ReduceSum", grad, ctx.ints([axis]), keepdims=1)
    return ctx.sub(grad, ctx.mul(ctx.op("Exp", log_probs), total))


_HALVES = (TensorProto.FLOAT16, TensorProto.BFLOAT16)


def fused_in_float32(ctx: GradientContext, build: Callable[..., str], *values: str) -> str:
    """``build(*values)``, with half-precision values cast to float32 first and the result cast back
    once: torch's fused backward kernels (softmax's, log-softmax's) compute in float32 and round once,
    where the ops of the formula, each rounded to float16 or bfloat16, lose the cancellation that makes
    a key bias's gradient zero (bfloat16: 77 times eager's error)."""
    half = ctx.elem_type(values[0])
    if half not in _HALVES:
        return build(*values)
    wide = [ctx.op("Cast", v, to=TensorProto.FLOAT) for v in values]
    return ctx.op("Cast", build(*wide), to=half)


def normalized_axis(ctx: GradientContext, node: GradNode, value: str | None = None) -> int:
    """The node's ``axis`` attribute (or its schema default) made non-negative against the rank of
    ``value`` (default: input 0)."""
    return node.attr("axis") % ctx.rank(value or node.input(0))


def inverse_permutation(perm: list[int]) -> list[int]:
    return sorted(range(len(perm)), key=perm.__getitem__)


def reduced_axes(ctx: GradientContext, node: GradNode) -> str | None:
    """A Reduce* node's axes as a backward value; None when absent or constant-empty."""
    value = ctx.constant_value(node.input(1))
    if value is not None and value.size == 0:
        return None
    return axes_input(ctx, node)


def expand_to_input(ctx: GradientContext, node: GradNode, grad: str) -> str:
    """Undo a Reduce*: reinsert the axes keepdims=0 dropped, then broadcast over the input's shape."""
    axes = reduced_axes(ctx, node)
    if axes is None and node.attr("noop_with_empty_axes"):
        return grad
    if axes is not None and not node.attr("keepdims"):
        grad = ctx.op("Unsqueeze", grad, axes)
    return ctx.op("Expand", grad, ctx.shape(node.input(0)))


def normalization_statistics(ctx: GradientContext, value: str, axes: str, epsilon: float) -> tuple[str, str]:
    """x̂ = (x - mean)·inv_std and inv_std of a normalization over ``axes`` of forward value ``value``,
    in its type: centred twice (x - mean, then minus the mean of that, so x̂ sums to zero within
    rounding of the centred values rather than of x) and the variance two-pass.

    Why not the forward's statistics: onnxruntime's CPU LayerNormalization (1.31) takes the variance
    as E[x²] - mean², which cancels wherever the mean is large next to the spread: its inv_std was
    measured up to 7.5e-5 off (630 ulp; two-pass: 1.2 ulp). The input gradient
    inv_std·(g - mean(g) - x̂·mean(g·x̂)) is itself a near-cancellation where few features normalize
    to almost ±1 (two features: 1 - x̂² = eps/(var + eps)), so it inherits that error a thousandfold;
    fused kernels keep statistics of ulp accuracy for exactly this formula. The second centring: the
    formula assumes Σx̂ = 0, and a mean rounded by δ makes dx wrong by about inv_std²·δ·|x - mean|·|g|
    (two features of 7.50 and 6.90: 4.2 units of inv_std·|g|·eps; re-centred: below 2.7 over 20,000
    random rows, where torch's own float32 kernel reaches 3.5e3)."""
    centred = _centred(ctx, _centred(ctx, value, axes), axes)
    variance = ctx.op("ReduceMean", ctx.mul(centred, centred), axes, keepdims=1)
    inv_std = ctx.op("Reciprocal", ctx.op("Sqrt", ctx.add(variance, ctx.scalar(written_epsilon(epsilon), like=value))))
    return ctx.mul(centred, inv_std), inv_std


def _centred(ctx: GradientContext, value: str, axes: str) -> str:
    return ctx.sub(value, ctx.op("ReduceMean", value, axes, keepdims=1))


def normalized_input_grad(ctx: GradientContext, g: str, x_hat: str, inv_std: str, axes: str) -> str:
    """dx of a normalization x̂ = (x - mean)·inv_std over ``axes``, given g = dy·scale:
    inv_std·(g - mean(g) - x̂·mean(g·x̂))."""
    mean_g = ctx.op("ReduceMean", g, axes, keepdims=1)
    mean_g_x_hat = ctx.op("ReduceMean", ctx.mul(g, x_hat), axes, keepdims=1)
    return ctx.mul(inv_std, ctx.sub(ctx.sub(g, mean_g), ctx.mul(x_hat, mean_g_x_hat)))


def pad_on_axes(ctx: GradientContext, value: str, rank: int, axes: str, begins: str, ends: str) -> str:
    """``Pad(value)`` by ``begins``/``ends`` (1-D int64, may be negative to crop) on ``axes`` only,
    written as pads over every axis: onnxruntime's transpose optimizer (1.31) permutes a Pad's pads
    as if they covered every axis and ignores its ``axes`` input, so a Transpose pushed through such
    a Pad reads out of bounds (seen on Phi's partial rotary slices: Gather 'indices element out of
    data bounds')."""
    wrapped = ctx.op("Where", ctx.op("Less", axes, ctx.ints([0])), ctx.add(axes, ctx.ints([rank])), axes)
    positions = ctx.op("Concat", wrapped, ctx.add(wrapped, ctx.ints([rank])), axis=0)
    pads = ctx.op("ScatterElements", ctx.ints([0] * (2 * rank)), positions, ctx.op("Concat", begins, ends, axis=0),
                  axis=0)
    return ctx.op("Pad", value, pads)


def extremum_grads(ctx: GradientContext, node: GradNode) -> dict[int, str]:
    """Max/Min of several (broadcast) inputs: dy goes to the inputs equal to the result, split evenly
    among ties (PyTorch's maximum/minimum: half each), summed back to each input's shape."""
    from reference.autodiff.broadcast import reduce_to_input

    y, like = ctx.forward(node.output(0)), node.output(0)
    hits = [ctx.op("CastLike", ctx.op("Equal", ctx.forward(node.input(i)), y), like) for i in range(node.num_inputs)]
    count = hits[0]
    for hit in hits[1:]:
        count = ctx.add(count, hit)
    share = ctx.div(node.grad(), count)
    return {i: reduce_to_input(ctx, node, i, ctx.mul(share, hits[i])) for i in node.wanted_inputs}


def extremum_reduction_grad(ctx: GradientContext, node: GradNode) -> dict[int, str]:
    """ReduceMax/ReduceMin: dy goes to the elements equal to the result, split evenly among ties
    (PyTorch's amax/amin and max()/min() without a dim; ``max(dim)`` picks one index, and the
    reference exports it as a gather of its argmax, so it never reaches this rule)."""
    x = ctx.forward(node.input(0))
    hits = ctx.op("CastLike", ctx.op("Equal", x, expand_to_input(ctx, node, ctx.forward(node.output(0)))), x)
    axes = reduced_axes(ctx, node)
    if axes is None and node.attr("noop_with_empty_axes"):
        count = hits
    else:
        count = ctx.op("ReduceSum", hits, *([axes] if axes is not None else []), keepdims=1)
    return {0: ctx.mul(ctx.div(expand_to_input(ctx, node, node.grad()), count), hits)}
