"""Activations and softmax."""
from __future__ import annotations

from hypothesis import strategies as st

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

