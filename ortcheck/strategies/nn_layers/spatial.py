"""Layers that move values in space: upsampling, pixel shuffles, sliding-window unfold/fold and
the padding layers (zero, constant, reflection, replication, circular)."""
from __future__ import annotations

import math

from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, example, floats, make, sides


@st.composite
def upsample(draw, nd: int, mode: str, align_corners: bool | None = None):
    """By an integer or fractional ``scale_factor``, or to a drawn ``size``."""
    shape = draw(sides(nd, 1 if mode == "nearest" else 2))
    if draw(st.booleans()):
        resize = dict(scale_factor=draw(st.sampled_from([2.0, 3.0, 1.5])))
    else:
        resize = dict(size=tuple(draw(sides(nd, 1, 6))) if nd > 1 else draw(st.integers(1, 6)))
    kwargs = {} if align_corners is None else dict(align_corners=align_corners)
    return example(make(nn.Upsample, mode=mode, **resize, **kwargs), floats(draw(BATCH), draw(SIDE), *shape))


@st.composite
def pixel_shuffle(draw, unshuffle: bool):
    factor, channels = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    h, w = draw(SIDE), draw(SIDE)
    if unshuffle:
        return example(make(nn.PixelUnshuffle, factor), floats(draw(BATCH), channels, h * factor, w * factor))
    return example(make(nn.PixelShuffle, factor), floats(draw(BATCH), channels * factor * factor, h, w))


def _blocks(size: int, kernel: int, dilation: int, padding: int, stride: int) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@st.composite
def _window(draw):
    kernel, dilation, stride = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    return dict(kernel_size=kernel, dilation=dilation, padding=draw(st.integers(0, kernel // 2)), stride=stride)


@st.composite
def unfold(draw):
    window = draw(_window())
    span = window["dilation"] * (window["kernel_size"] - 1) + 1
    shape = draw(sides(2, max(1, span - 2 * window["padding"]), 5))
    return example(make(nn.Unfold, **window), floats(draw(BATCH), draw(SIDE), *shape))


@st.composite
def fold(draw):
    """Blocks ``[N, C·k², L]`` summed back into an image whose size makes L whole."""
    window = draw(_window())
    span = window["dilation"] * (window["kernel_size"] - 1) + 1
    output = draw(sides(2, max(1, span - 2 * window["padding"]), 5))
    blocks = math.prod(_blocks(side, window["kernel_size"], window["dilation"], window["padding"], window["stride"])
                       for side in output)
    channels = draw(SIDE)
    return example(make(nn.Fold, tuple(output), **window),
                   floats(draw(BATCH), channels * window["kernel_size"] ** 2, blocks))


PADDINGS = {"zero": nn.ZeroPad2d, "constant": nn.ConstantPad2d, "reflection": nn.ReflectionPad2d,
            "replication": nn.ReplicationPad2d, "circular": nn.CircularPad2d}
PADDINGS_1D = {"zero": nn.ZeroPad1d, "constant": nn.ConstantPad1d, "reflection": nn.ReflectionPad1d,
               "replication": nn.ReplicationPad1d, "circular": nn.CircularPad1d}
PADDINGS_3D = {"zero": nn.ZeroPad3d, "constant": nn.ConstantPad3d, "reflection": nn.ReflectionPad3d,
               "replication": nn.ReplicationPad3d, "circular": nn.CircularPad3d}


@st.composite
def padding(draw, kind: str, nd: int):
    """Each side padded by its own amount; reflection and circular pad less than the side."""
    cls = {1: PADDINGS_1D, 2: PADDINGS, 3: PADDINGS_3D}[nd][kind]
    shape = draw(sides(nd, 2, 5 if nd < 3 else 3))
    amounts = [draw(st.integers(0, min(2, side - 1) if kind in ("reflection", "circular") else 2))
               for side in reversed(shape) for _ in range(2)]
    args = (tuple(amounts),) + ((draw(st.sampled_from([-1.5, 0.5])),) if kind == "constant" else ())
    return example(make(cls, *args), floats(draw(BATCH), draw(SIDE), *shape))


@st.composite
def upsampling_2d(draw, cls: type):
    """The legacy ``UpsamplingNearest2d`` / ``UpsamplingBilinear2d`` (align_corners=True), by a factor or to a size."""
    shape = draw(sides(2, 2))
    resize = dict(scale_factor=draw(st.sampled_from([2.0, 3.0]))) if draw(st.booleans()) else dict(size=tuple(draw(sides(2, 1, 6))))
    return example(make(cls, **resize), floats(draw(BATCH), draw(SIDE), *shape))
