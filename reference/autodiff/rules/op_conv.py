import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_conv import (bias_grad, conv_attrs, pad_spatial, same_pads, spatial_shape,
                                                   weight_grad)
from reference.autodiff.samples import F32, Sample, normal


# float32: onnxruntime's CPU Conv has no float64 kernel. The kernel reshaped to constant sizes: the exporter
# needs the weight's shape, which the harness's dynamic axes would hide.
@gradient_rule("Conv", samples=(
    Sample(lambda x, w, b: F.conv2d(x, w.reshape(6, 4, 3, 3), b, stride=2, padding=1),
           (normal(2, 4, 7, 6, dtype=F32), normal(6, 4, 3, 3, dtype=F32), normal(6, dtype=F32)), wrt=(0, 1, 2),
           more=((normal(1, 4, 9, 5, dtype=F32), normal(6, 4, 3, 3, dtype=F32), normal(6, dtype=F32)),),
           name="strided"),
    Sample(lambda x, w: F.conv1d(x, w.reshape(6, 2, 3), dilation=2, groups=2),
           (normal(2, 4, 9, dtype=F32), normal(6, 2, 3, dtype=F32)), wrt=(0, 1),
           more=((normal(1, 4, 11, dtype=F32), normal(6, 2, 3, dtype=F32)),), name="grouped_dilated"),
))
def conv_grad(ctx, node):
    """dX is the transposed convolution of dY, cut back to X (pads dropped, a tail no window read
    padded with zeros); dW is a convolution of X by dY (``weight_grad``); dB sums dY. SAME padding
    is computed from the run-time sizes, explicit pads are the node's."""
    attrs = conv_attrs(ctx, node)
    x, dy, grads = node.input(0), node.grad(), {}
    if attrs.auto_pad.startswith("SAME"):
        begins, ends = same_pads(ctx, attrs, x)
    else:
        begins, ends = ctx.ints(attrs.pads[:attrs.spatial]), ctx.ints(attrs.pads[attrs.spatial:])
    if node.wants(0):
        full = ctx.op("ConvTranspose", dy, ctx.forward(node.input(1)), group=attrs.group, strides=attrs.strides,
                      dilations=attrs.dilations)
        size = spatial_shape(ctx, x)
        tail = ctx.sub(ctx.add(ctx.add(size, begins), ends), ctx.op("Slice", ctx.op("Shape", full), ctx.ints([2]),
                                                                      ctx.ints([2 + attrs.spatial])))
        full = pad_spatial(ctx, full, ctx.ints([0] * attrs.spatial), tail)
        grads[0] = ctx.op("Slice", full, begins, ctx.add(begins, size), ctx.ints(range(2, 2 + attrs.spatial)))
    if node.wants(1):
        if attrs.auto_pad.startswith("SAME"):
            grads[1] = weight_grad(ctx, pad_spatial(ctx, ctx.forward(x), begins, ends), dy, attrs,
                                   [0] * (2 * attrs.spatial))
        else:
            grads[1] = weight_grad(ctx, ctx.forward(x), dy, attrs, attrs.pads)
    if node.wants(2):
        grads[2] = bias_grad(ctx, dy, attrs.spatial)
    return grads
