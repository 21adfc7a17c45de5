import numpy as np
import torch.nn.functional as F

from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import F32, Sample, normal


# Attributes that shape the per-axis interpolation (the rule reuses them on an identity matrix).
_INTERPOLATION = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                  "antialias")


@gradient_rule("Resize", since=11, samples=(
    Sample(lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), (normal(2, 3, 4, 5, dtype=F32),),
           more=((normal(1, 3, 5, 6, dtype=F32),),), name="nearest"),
    Sample(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), (normal(2, 3, 4, 5, dtype=F32),),
           more=((normal(1, 3, 5, 6, dtype=F32),),), name="linear"),
    Sample(lambda x: F.interpolate(x, size=(7, 4), mode="bilinear", align_corners=True),
           (normal(2, 3, 4, 5, dtype=F32),), more=((normal(1, 3, 5, 6, dtype=F32),),),
           name="linear_sizes_align_corners"),
    Sample(lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"), (normal(2, 3, 4, 5, dtype=F32),),
           more=((normal(1, 3, 5, 6, dtype=F32),),), name="cubic"),
))
def resize_grad(ctx, node):
    """Resize is separable and linear: along each resized axis y = M·x, with M [out, in] depending
    only on that axis's sizes, scale and the node's modes. M is the node's own interpolation applied
    to an identity matrix along its first axis (so every nearest/linear/cubic and coordinate mode
    is matched by construction, at run-time sizes), and dX = dY·M along each axis in turn."""
    x, rank = node.input(0), ctx.rank(node.input(0))
    mode = node.attr("coordinate_transformation_mode")
    policy = node.attr("keep_aspect_ratio_policy") or "stretch"
    if mode == "tf_crop_and_resize" or policy != "stretch":
        raise ValueError(f"Resize node '{node.name}': no gradient for coordinate_transformation_mode {mode!r} "
                         f"with keep_aspect_ratio_policy {policy!r}")
    attrs = {name: node.attr(name) for name in _INTERPOLATION if node.attr(name) is not None}
    axes = [a % rank for a in (node.attr("axes") or range(rank))]
    scales = _given(ctx, node, 2)
    grad = node.grad()
    for j, axis in enumerate(axes):
        if scales is not None and (known := ctx.constant_value(scales)) is not None and known[j] == 1:
            continue
        if scales is None and _size_kept(ctx, node, j, axis):
            continue
        grad = _along(ctx, node, grad, axis, j, scales, attrs)
    return {0: grad}


def _given(ctx, node, index: int) -> str | None:
    """Input ``index`` (scales) when present and non-empty, else None (sizes are given)."""
    name = node.input(index)
    if not name:
        return None
    value = ctx.constant_value(name)
    if value is not None and value.size == 0:
        return None
    dims = ctx.dims(name)
    if value is None and dims is not None and dims[0] == 0:
        return None
    return name


def _size_kept(ctx, node, j: int, axis: int) -> bool:
    """Whether entry ``j`` of the sizes is the input's own size along ``axis`` (an identity there):
    the same size or symbol after inference, or (what exporters build) a Concat whose piece at ``j``
    slices or gathers Shape(input) at ``axis``."""
    x = node.input(0)
    in_dims, out_dims = ctx.dims(x), ctx.dims(node.output(0))
    if in_dims and out_dims and in_dims[axis] is not None and in_dims[axis] == out_dims[axis]:
        return True
    concat = ctx.forward_model.producer(node.input(3))
    if concat is None or concat.op_type != "Concat":
        return False
    start = 0
    for piece in concat.input:
        length = (ctx.dims(piece) or [None])[0]
        if not isinstance(length, int):
            return False
        if start <= j < start + length:
            return _shape_entry(ctx, piece, j - start) == (x, axis)
        start += length
    return False


def _shape_entry(ctx, piece: str, offset: int) -> tuple[str, int] | None:
    """(value, axis) when entry ``offset`` of 1-D ``piece`` is Shape(value)[axis] by a Slice or Gather
    with constant arguments (unit steps), else None."""
    node = ctx.forward_model.producer(piece)
    if node is None or node.op_type not in ("Slice", "Gather"):
        return None
    shape = ctx.forward_model.producer(node.input[0])
    if shape is None or shape.op_type != "Shape" or shape.attribute:
        return None
    args = [ctx.constant_value(name) for name in node.input[1:]]
    if any(value is None for value in args):
        return None
    rank = ctx.rank(shape.input[0])
    if node.op_type == "Gather":
        return shape.input[0], int(args[0].reshape(-1)[offset]) % rank
    if len(args) > 3 and (args[3] != 1).any():
        return None
    begin = int(args[0].reshape(-1)[0])
    return shape.input[0], (begin % rank if begin < rank else rank) + offset


def _along(ctx, node, grad: str, axis: int, j: int, scales: str | None, attrs: dict) -> str:
    x, rank = node.input(0), ctx.rank(node.input(0))
    size = ctx.dim_size(x, axis)
    square = ctx.zeros(ctx.op("Concat", size, size, axis=0), like=x)
    identity = ctx.op("EyeLike", square)
    if scales is not None:
        scale = ctx.op("Gather", ctx.forward(scales), ctx.ints([j]))
        matrix = ctx.op("Resize", identity, "", ctx.op("Concat", scale, ctx.constant(np.ones(1, np.float32)), axis=0),
                        **attrs)
    else:
        out = ctx.op("Gather", ctx.as_int64(node.input(3)), ctx.ints([j]))
        matrix = ctx.op("Resize", identity, "", "", ctx.op("Concat", out, size, axis=0), **attrs)
    last = rank - 1
    perm = list(range(rank))
    perm[axis], perm[last] = last, axis
    if axis != last:
        grad = ctx.op("Transpose", grad, perm=perm)
    grad = ctx.op("MatMul", grad, matrix)
    return grad if axis == last else ctx.op("Transpose", grad, perm=perm)
