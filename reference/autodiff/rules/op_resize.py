import numpy as np

from reference.autodiff.registry import gradient_rule

# Attributes that shape the per-axis interpolation (the rule reuses them on an identity matrix).
_INTERPOLATION = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                  "antialias")


@gradient_rule("Resize", since=11)
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
        in_dims, out_dims = ctx.dims(x) or [None] * rank, ctx.dims(node.output(0)) or [None] * rank
        if scales is None and in_dims[axis] is not None and in_dims[axis] == out_dims[axis]:
            continue  # same size (or symbol): an identity along this axis
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
