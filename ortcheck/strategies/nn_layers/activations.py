"""Activations and softmax."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import SIDE, example, floats, make


@st.composite
def activation(draw, cls: type, inputs: str = "wide", **kwargs):
    """On inputs of rank 1-4 spread wide enough to reach saturation and linear parts (``inputs``: an
    ``Input`` kind); ``kwargs`` maps a constructor argument to its strategy."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=4))
    drawn = {name: draw(strategy) for name, strategy in kwargs.items()}
    if "dim" in drawn:
        drawn["dim"] = drawn["dim"] % len(shape) - draw(st.sampled_from([0, len(shape)]))
    return example(make(cls, **drawn), floats(*shape, kind=inputs))



@st.composite
def dropout_nd(draw, cls: type):
    """Channel dropout at p = 0: the identity, in training mode (``[N, C, *spatial]``)."""
    spatial = 1 if cls is nn.Dropout1d else 2
    return example(make(cls, p=0.0), floats(draw(SIDE), draw(SIDE), *[draw(SIDE) for _ in range(spatial)]))
