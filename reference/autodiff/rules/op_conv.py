from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_conv import (bias_grad, conv_attrs, pad_spatial, same_pads, spatial_shape,
                                                   weight_grad)


@gradient_rule("Conv")
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
