"""What the Conv and ConvTranspose rules share: attributes with defaults, pads, and the weight gradient.

A convolution's weight gradient is itself a convolution: the input plays the batch of images,
the output gradient the kernel, strides and dilations swap roles. Groups fold into the channel
axis (``[N, g·Ci, ...]`` → ``[Ci, g·N, ...]``), so one grouped Conv computes every group's
gradient at once, for 1d, 2d and 3d alike, with sizes read at run time (nothing baked from the
export's example).
"""
from __future__ import annotations

import dataclasses

from reference.autodiff.context import GradientContext
from reference.autodiff.grad_node import GradNode


@dataclasses.dataclass(frozen=True)
class ConvAttrs:
    spatial: int
    group: int
    strides: list[int]
    dilations: list[int]
    kernel: list[int]
    auto_pad: str
    pads: list[int]  # begins then ends, as ONNX writes them (explicit pads only)

    @property
    def effective_kernel(self) -> list[int]:
        return [(k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations)]


def conv_attrs(ctx: GradientContext, node: GradNode) -> ConvAttrs:
    spatial = ctx.rank(node.input(0)) - 2
    kernel = node.attr("kernel_shape") or (ctx.dims(node.input(1)) or [None] * (spatial + 2))[2:]
    if not all(isinstance(k, int) for k in kernel):
        raise ValueError(f"{node.op_type} node '{node.name}': the kernel size must be known (kernel_shape or the "
                         f"weight's shape), got {kernel}")
    auto_pad = node.attr("auto_pad") or "NOTSET"
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    return ConvAttrs(spatial, node.attr("group") or 1, list(node.attr("strides") or [1] * spatial),
                     list(node.attr("dilations") or [1] * spatial), list(kernel), auto_pad,
                     list(node.attr("pads") or [0] * (2 * spatial)) if auto_pad == "NOTSET" else [0] * (2 * spatial))


def spatial_shape(ctx: GradientContext, name: str) -> str:
    """The sizes of ``name`` after its batch and channel axes, as a 1-D int64 tensor."""
    return ctx.op("Slice", ctx.shape(name), ctx.ints([2]), ctx.ints([ctx.rank(name)]))


def same_pads(ctx: GradientContext, attrs: ConvAttrs, x: str) -> tuple[str, str]:
    """(begins, ends) of SAME_UPPER/SAME_LOWER padding for input ``x``, computed from its run-time sizes:
    total = max(0, (ceil(size / stride) - 1) · stride + effective kernel - size), the odd one at the end
    (UPPER) or the beginning (LOWER)."""
    size, strides = spatial_shape(ctx, x), ctx.ints(attrs.strides)
    one = ctx.ints([1])
    blocks = ctx.op("Div", ctx.add(size, ctx.sub(strides, one)), strides)
    total = ctx.op("Max", ctx.ints([0] * attrs.spatial),
                   ctx.sub(ctx.add(ctx.mul(ctx.sub(blocks, one), strides), ctx.ints(attrs.effective_kernel)), size))
    half = ctx.op("Div", total, ctx.ints([2]))
    other = ctx.sub(total, half)
    return (half, other) if attrs.auto_pad == "SAME_UPPER" else (other, half)


def pad_spatial(ctx: GradientContext, value: str, begins: str, ends: str) -> str:
    """``value`` with zeros added before/after each spatial axis (begins/ends: 1-D int64 tensors)."""
    zeros = ctx.ints([0, 0])
    return ctx.op("Pad", value, ctx.op("Concat", zeros, begins, zeros, ends, axis=0))


def weight_grad(ctx: GradientContext, x: str, dy: str, attrs: ConvAttrs, pads: list[int]) -> str:
    """dW[o, i, k] = Σ_n,p dy[n, o, p] · x_padded[n, g(o)·Ci + i, p·stride + k·dilation], shaped
    ``[Co_total, Ci, *kernel]`` for ``y = Conv(x, W)`` with ``attrs`` and explicit ``pads``."""
    g, spatial = attrs.group, attrs.spatial
    x_shape = ctx.op("Shape", x)
    batch = ctx.op("Slice", x_shape, ctx.ints([0]), ctx.ints([1]))
    per_group = ctx.op("Div", ctx.op("Slice", x_shape, ctx.ints([1]), ctx.ints([2])), ctx.ints([g]))
    x_sizes = ctx.op("Slice", x_shape, ctx.ints([2]), ctx.ints([2 + spatial]))
    tail = list(range(3, 3 + spatial))
    # x [N, g·Ci, S] -> [Ci, g·N, S]: a batch of Ci images whose channels are (group, sample)
    images = ctx.op("Reshape", x, ctx.op("Concat", batch, ctx.ints([g]), per_group, x_sizes, axis=0))
    images = ctx.op("Transpose", images, perm=[2, 1, 0, *tail])
    images = ctx.op("Reshape", images, ctx.op("Concat", per_group, ctx.ints([-1]), x_sizes, axis=0))
    # dy [N, g·Co, P] -> [g·Co, N, P]: one kernel per output channel, reading its group's samples
    kernels = ctx.op("Transpose", dy, perm=[1, 0, *range(2, 2 + spatial)])
    grad = ctx.op("Conv", images, kernels, group=g, strides=attrs.dilations, dilations=attrs.strides, pads=pads)
    grad = ctx.op("Transpose", grad, perm=[1, 0, *range(2, 2 + spatial)])
    # the correlation may run past the kernel where strides left the input's tail unread
    return ctx.op("Slice", grad, ctx.ints([0] * spatial), ctx.ints(attrs.kernel), ctx.ints(range(2, 2 + spatial)))


def bias_grad(ctx: GradientContext, dy: str, spatial: int) -> str:
    return ctx.op("ReduceSum", dy, ctx.ints([0, *range(2, 2 + spatial)]), keepdims=0)
