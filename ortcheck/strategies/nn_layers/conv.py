"""Convolutions, their transposes and pooling."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, example, floats, make, sides


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
    cls = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d}[nd]
    layer = make(cls, c_in, c_out, kernel, stride=stride, padding=padding, output_padding=output_padding,
                 groups=groups, bias=draw(st.booleans()), dilation=dilation)
    return example(layer, floats(draw(BATCH), c_in, *draw(sides(nd))))



@st.composite
def pool(draw, cls: type, nd: int):
    """Max or average windows with stride, padding (at most half the window) and ceil mode."""
    kernel = draw(st.integers(1, 3))
    stride = draw(st.none() | st.integers(1, 3))
    padding = draw(st.integers(0, kernel // 2))
    kwargs = dict(stride=stride, padding=padding, ceil_mode=draw(st.booleans()))
    span = kernel
    if cls in (nn.MaxPool1d, nn.MaxPool2d):
        kwargs["dilation"] = draw(st.integers(1, 2))
        span = kwargs["dilation"] * (kernel - 1) + 1
    else:
        kwargs["count_include_pad"] = draw(st.booleans())
    # At least one whole window per side: a max-pool window lying entirely in the padding gives
    # -inf, and torch 2.13's backward then corrupts the heap and aborts the process (eager itself:
    # MaxPool1d(2, padding=1, ceil_mode=True, dilation=2) on float64 [1, 3, 1]).
    shape = draw(sides(nd, span, 5))
    return example(make(cls, kernel, **kwargs), floats(draw(BATCH), draw(SIDE), *shape))


@st.composite
def adaptive_pool(draw, nd: int, uneven: bool):
    """Output sizes dividing the input's, or (``uneven``) not, with overlapping windows."""
    if uneven:  # every output side 2-3 and its input side strictly between it and twice it
        out = draw(sides(nd, 2, 3))
        shape = [size + draw(st.integers(1, size - 1)) for size in out]
    else:
        out = draw(sides(nd, 1, 3))
        shape = [size * draw(st.integers(1, 2)) for size in out]
    cls = {1: nn.AdaptiveAvgPool1d, 2: nn.AdaptiveAvgPool2d}[nd]
    return example(make(cls, out[0] if nd == 1 else tuple(out)), floats(draw(BATCH), draw(SIDE), *shape))
