import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_conv import bias_grad, conv_attrs, weight_grad
from reference.autodiff.samples import F32, Sample, normal


# float32 and constant kernel sizes, as Conv's samples (op_conv.py).
@gradient_rule("ConvTranspose", samples=(
    Sample(lambda x, w, b: F.conv_transpose2d(x, w.reshape(4, 6, 3, 3), b, stride=2, output_padding=1),
           (normal(2, 4, 4, 3, dtype=F32), normal(4, 6, 3, 3, dtype=F32), normal(6, dtype=F32)), wrt=(0, 1, 2),
           more=((normal(1, 4, 5, 2, dtype=F32), normal(4, 6, 3, 3, dtype=F32), normal(6, dtype=F32)),),
           name="strided"),
    Sample(lambda x, w: F.conv_transpose1d(x, w.reshape(4, 3, 3), groups=2, dilation=2, padding=1),
           (normal(2, 4, 5, dtype=F32), normal(4, 3, 3, dtype=F32)), wrt=(0, 1),
           more=((normal(1, 4, 8, dtype=F32), normal(4, 3, 3, dtype=F32)),), name="grouped_dilated"),
))
def conv_transpose_grad(ctx, node):
    """Y is X spread through W, cropped by the pads (output_padding only adds unread zeros at the
    end). So dX is the convolution of dY padded back by the same pads (strides and dilations as
    given; the convolution's own rounding drops output_padding's tail), and dW the correlation of
    that padded dY with X (``weight_grad`` with the roles of input and output gradient swapped)."""
    attrs = conv_attrs(ctx, node)
    if attrs.auto_pad.startswith("SAME") or node.attr("output_shape"):
        raise ValueError(f"ConvTranspose node '{node.name}': gradients need explicit pads and output_padding "
                         f"(auto_pad {attrs.auto_pad!r}, output_shape {node.attr('output_shape')!r} are not supported)")
    dy, grads = node.grad(), {}
    if node.wants(0):
        grads[0] = ctx.op("Conv", dy, ctx.forward(node.input(1)), group=attrs.group, strides=attrs.strides,
                          dilations=attrs.dilations, pads=attrs.pads)
    if node.wants(1):
        grads[1] = weight_grad(ctx, dy, ctx.forward(node.input(0)), attrs, attrs.pads)
    if node.wants(2):
        grads[2] = bias_grad(ctx, dy, attrs.spatial)
    return grads
