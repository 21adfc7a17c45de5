"""Activations, softmax and the dropouts at p = 0."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import SIDE, example, floats, make


@st.composite
def activation(draw, cls: type, inputs: str = "wide", min_rank: int = 1, eval: bool = False, **kwargs):
    """On inputs of rank ``min_rank``-4 spread wide enough to reach saturation and linear parts
    (``inputs``: an ``Input`` kind); ``kwargs`` maps a constructor argument to its strategy."""
    shape = draw(st.lists(SIDE, min_size=min_rank, max_size=4))
    drawn = {name: draw(strategy) for name, strategy in kwargs.items()}
    if "dim" in drawn:
        drawn["dim"] = drawn["dim"] % len(shape) - draw(st.sampled_from([0, len(shape)]))
    return example(make(cls, **drawn), floats(*shape, kind=inputs), eval=eval)


@st.composite
def prelu(draw):
    """One learned slope, or one per channel (axis 1 of an input of rank 2-4)."""
    shape = draw(st.lists(SIDE, min_size=2, max_size=4))
    slopes = shape[1] if draw(st.booleans()) else 1
    return example(make(nn.PReLU, slopes, init=draw(st.sampled_from([0.25, -0.5]))), floats(*shape, kind="wide"))


@st.composite
def glu(draw):
    """Halves of an even axis, negative or not."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=4))
    dim = draw(st.integers(0, len(shape) - 1))
    shape[dim] *= 2
    return example(make(nn.GLU, dim - draw(st.sampled_from([0, len(shape)]))), floats(*shape, kind="wide"))



@st.composite
def dropout_nd(draw, cls: type):
    """Dropout at p = 0: the identity, in training mode (``[N, C, *spatial]``; the alpha dropouts too)."""
    spatial = {nn.Dropout1d: 1, nn.Dropout3d: 3}.get(cls, 2)
    return example(make(cls, p=0.0), floats(draw(SIDE), draw(SIDE), *[draw(SIDE) for _ in range(spatial)]))
