"""Convolutions, their transposes and pooling (max, average, adaptive, power-average, unpooling)."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, example, floats, make, sides
from .wrappers import PoolUnpool


@st.composite
def conv(draw, nd: int, same: bool = False, padding_modes=("zeros",)):
    """Grouped, strided, dilated, with explicit padding or (``same``) ``padding="same"`` at stride 1;
    every input side at least the window."""
    groups = draw(st.integers(1, 2))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel, dilation = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    padding_mode = draw(st.sampled_from(padding_modes))
    span = dilation * (kernel - 1) + 1
    if same:
        padding, stride, low = "same", 1, 1
        pad = span - 1 - (span - 1) // 2  # the larger side of "same"
    else:
        pad, stride = draw(st.integers(0, 2)), draw(st.integers(1, 2))
        padding, low = pad, max(1, span - 2 * pad)
    if padding_mode != "zeros":
        low = max(low, pad + 1)  # reflect: a pad smaller than the side
    shape = draw(sides(nd, low, max(low, 5 - nd)))
    cls = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[nd]
    layer = make(cls, c_in, c_out, kernel, stride=stride, padding=padding, dilation=dilation, groups=groups,
                 bias=draw(st.booleans()), padding_mode=padding_mode)
    return example(layer, floats(draw(BATCH), c_in, *shape))


@st.composite
def conv_transpose(draw, nd: int):
    """Padding at most half the dilated window, so every output side is at least 1."""
    groups = draw(st.integers(1, 2))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel, stride, dilation = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    padding = draw(st.integers(0, dilation * (kernel - 1) // 2))
    output_padding = draw(st.integers(0, max(stride, dilation) - 1))
    cls = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}[nd]
    layer = make(cls, c_in, c_out, kernel, stride=stride, padding=padding, output_padding=output_padding,
                 groups=groups, bias=draw(st.booleans()), dilation=dilation)
    return example(layer, floats(draw(BATCH), c_in, *draw(sides(nd, 1, 4 if nd < 3 else 3))))



@st.composite
def pool(draw, cls: type, nd: int):
    """Max or average windows with stride, padding (at most half the window) and ceil mode."""
    kernel = draw(st.integers(1, 3))
    stride = draw(st.none() | st.integers(1, 3))
    padding = draw(st.integers(0, kernel // 2))
    kwargs = dict(stride=stride, padding=padding, ceil_mode=draw(st.booleans()))
    span = kernel
    if cls in (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d):
        kwargs["dilation"] = draw(st.integers(1, 2))
        span = kwargs["dilation"] * (kernel - 1) + 1
    else:
        kwargs["count_include_pad"] = draw(st.booleans())
    # At least one whole window per side: a max-pool window lying entirely in the padding gives
    # -inf, and torch 2.13's backward then corrupts the heap and aborts the process (eager itself:
    # MaxPool1d(2, padding=1, ceil_mode=True, dilation=2) on float64 [1, 3, 1]).
    shape = draw(sides(nd, span, 5 if nd < 3 else max(span, 4)))
    return example(make(cls, kernel, **kwargs), floats(draw(BATCH), draw(SIDE), *shape))


@st.composite
def adaptive_pool(draw, nd: int, uneven: bool, kind: str = "avg"):
    """Output sizes dividing the input's, or (``uneven``) not, with overlapping windows; averages or
    (``kind="max"``) maxima."""
    if uneven:  # every output side 2-3 and its input side strictly between it and twice it
        out = draw(sides(nd, 2, 3))
        shape = [size + draw(st.integers(1, size - 1)) for size in out]
    else:
        out = draw(sides(nd, 1, 3))
        shape = [size * draw(st.integers(1, 2)) for size in out]
    cls = {("avg", 1): nn.AdaptiveAvgPool1d, ("avg", 2): nn.AdaptiveAvgPool2d, ("avg", 3): nn.AdaptiveAvgPool3d,
           ("max", 1): nn.AdaptiveMaxPool1d, ("max", 2): nn.AdaptiveMaxPool2d, ("max", 3): nn.AdaptiveMaxPool3d}[kind, nd]
    return example(make(cls, out[0] if nd == 1 else tuple(out)), floats(draw(BATCH), draw(SIDE), *shape))


@st.composite
def lp_pool(draw, nd: int):
    """Power-average windows (``norm_type`` 1, 2 or 3) with stride and ceil mode, over positive
    inputs: at a window summing to 0 the p-th root has no gradient eager and a graph agree on."""
    kernel = draw(st.integers(1, 3))
    cls = {1: nn.LPPool1d, 2: nn.LPPool2d, 3: nn.LPPool3d}[nd]
    layer = make(cls, draw(st.sampled_from([1.0, 2.0, 3.0])), kernel, stride=draw(st.none() | st.integers(1, 2)),
                 ceil_mode=draw(st.booleans()))
    return example(layer, floats(draw(BATCH), draw(SIDE), *draw(sides(nd, kernel, 4)), kind="positive"))


@st.composite
def max_unpool(draw, nd: int):
    """``MaxUnpool`` of a ``MaxPool(return_indices=True)``: the maxima back at their places, zeros
    elsewhere (the pair as one module: the indices come from the pool). Each input side is one the
    unpool's default output size restores, ``(n - 1)·stride + kernel``: a shorter default would leave
    the indices of the last window outside it (eager raises "Found an invalid max index")."""
    kernel = draw(st.integers(1, 3))
    stride = draw(st.integers(1, kernel))
    pools = {1: (nn.MaxPool1d, nn.MaxUnpool1d), 2: (nn.MaxPool2d, nn.MaxUnpool2d), 3: (nn.MaxPool3d, nn.MaxUnpool3d)}
    pool_cls, unpool_cls = pools[nd]
    layer = make(PoolUnpool, make(pool_cls, kernel, stride=stride, return_indices=True), make(unpool_cls, kernel, stride=stride))
    shape = [(windows - 1) * stride + kernel for windows in draw(sides(nd, 1, 3))]
    return example(layer, floats(draw(BATCH), draw(SIDE), *shape))
