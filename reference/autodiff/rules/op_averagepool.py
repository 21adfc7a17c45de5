import numpy as np
from onnx import helper, numpy_helper
from torch import nn

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_conv import ConvAttrs, pad_spatial, same_pads, spatial_shape
from reference.autodiff.samples import F32, Sample, normal


@gradient_rule("AveragePool", samples=(
    Sample(nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (normal(2, 3, 7, 8, dtype=F32),),
           more=((normal(1, 3, 9, 6, dtype=F32),),), name="exclude_pad"),
    Sample(nn.AvgPool1d(2, stride=2, ceil_mode=True), (normal(2, 3, 7, dtype=F32),),
           more=((normal(1, 3, 9, dtype=F32),),), name="ceil_mode"),
))
def average_pool_grad(ctx, node):
    """Each window spreads dy / its divisor over the positions it read: a ConvTranspose of the
    scaled dy with a kernel of ones (channels folded into the batch), cut back to X like the Conv
    rule's dX. The divisors come from the run-time sizes (``_divisors``). Sizes, pads and the
    ceil_mode tail are never baked from the export's example."""
    x, dy = node.input(0), node.grad()
    attrs = _attrs(ctx, node)
    if attrs.auto_pad.startswith("SAME"):
        begins, ends = same_pads(ctx, attrs, x)
    else:
        begins, ends = ctx.ints(attrs.pads[:attrs.spatial]), ctx.ints(attrs.pads[attrs.spatial:])
    dims = range(2, 2 + attrs.spatial)
    out_sizes = ctx.op("Slice", ctx.op("Shape", dy), ctx.ints([2]), ctx.ints([2 + attrs.spatial]))
    scaled = ctx.div(dy, ctx.op("Cast", _divisors(ctx, node, attrs, begins, ends, out_sizes), to=ctx.elem_type(x)))
    images = ctx.op("Reshape", scaled, ctx.op("Concat", ctx.ints([-1, 1]), out_sizes, axis=0))
    ones = ctx.constant(np.ones([1, 1, *attrs.kernel], dtype=ctx.np_dtype(x)))
    full = ctx.op("ConvTranspose", images, ones, strides=attrs.strides, dilations=attrs.dilations)
    size = spatial_shape(ctx, x)
    full_size = ctx.op("Slice", ctx.op("Shape", full), ctx.ints([2]), ctx.ints([2 + attrs.spatial]))
    tail = ctx.sub(ctx.add(ctx.add(size, begins), ends), full_size)  # < 0: ceil_mode windows past the end pads
    full = pad_spatial(ctx, full, ctx.ints([0] * attrs.spatial), tail)
    dx = ctx.op("Slice", full, begins, ctx.add(begins, size), ctx.ints(dims))
    return {0: ctx.op("Reshape", dx, ctx.shape(x))}


def _attrs(ctx, node) -> ConvAttrs:
    spatial = ctx.rank(node.input(0)) - 2
    auto_pad = node.attr("auto_pad") or "NOTSET"
    return ConvAttrs(spatial, 1, list(node.attr("strides") or [1] * spatial),
                     list(node.attr("dilations") or [1] * spatial), list(node.attr("kernel_shape")), auto_pad,
                     list(node.attr("pads") or [0] * (2 * spatial)) if auto_pad == "NOTSET" else [0] * (2 * spatial))


def _divisors(ctx, node, attrs: ConvAttrs, begins: str, ends: str, out_sizes: str) -> str:
    """Each window's divisor, shaped [1, 1, *output sizes] (float32; small integers, exact).

    ``valid`` counts the input positions a window reads (a Conv of ones, with enough zeros after the
    end pads for ceil_mode's last windows); that is the divisor when padding isn't counted. Otherwise
    the divisor is whatever the forward op divides by (with ceil_mode a window past the pads counts
    only part of itself), recovered exactly from the node itself on ones: valid / AveragePool(ones)."""
    float32 = np.float32
    ones = ctx.op("ConstantOfShape", ctx.op("Concat", ctx.ints([1, 1]), spatial_shape(ctx, node.input(0)), axis=0),
                  value=numpy_helper.from_array(np.ones(1, dtype=float32)))
    extra = ctx.ints([s - 1 if node.attr("ceil_mode") else 0 for s in attrs.strides])
    padded = pad_spatial(ctx, ones, begins, ctx.add(ends, extra))
    kernel = ctx.constant(np.ones([1, 1, *attrs.kernel], dtype=float32))
    valid = ctx.op("Conv", padded, kernel, strides=attrs.strides, dilations=attrs.dilations)
    valid = ctx.op("Slice", valid, ctx.ints([0] * attrs.spatial), out_sizes, ctx.ints(range(2, 2 + attrs.spatial)))
    if not node.attr("count_include_pad"):
        return valid
    averaged = ctx.op("AveragePool", ones, **{a.name: _plain(a) for a in node.proto.attribute})
    return ctx.op("Round", ctx.div(valid, averaged))


def _plain(attribute):
    value = helper.get_attribute_value(attribute)
    return value.decode() if isinstance(value, bytes) else value
