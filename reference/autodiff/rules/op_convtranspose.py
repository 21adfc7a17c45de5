from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common_conv import bias_grad, conv_attrs, weight_grad


@gradient_rule("ConvTranspose")
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
