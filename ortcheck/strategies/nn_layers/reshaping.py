"""Layers that only rearrange values: Identity, Flatten, Unflatten, ChannelShuffle."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, example, floats, make


@st.composite
def identity(draw):
    return example(make(nn.Identity, draw(st.integers(0, 3))), floats(*draw(st.lists(SIDE, min_size=1, max_size=3))))


@st.composite
def flatten(draw):
    """From a start axis to an end axis (negative or not), ``end >= start``."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=4))
    start = draw(st.integers(0, len(shape) - 1))
    end = draw(st.integers(start, len(shape) - 1))
    return example(make(nn.Flatten, start - draw(st.sampled_from([0, len(shape)])), end - len(shape)), floats(*shape))


@st.composite
def unflatten(draw):
    """One axis split into 2-3 factors, one of them -1 or not."""
    factors = draw(st.lists(st.integers(1, 3), min_size=2, max_size=3))
    shape = draw(st.lists(SIDE, min_size=0, max_size=2))
    dim = draw(st.integers(0, len(shape)))
    size = 1
    for factor in factors:
        size *= factor
    sizes = tuple(-1 if draw(st.booleans()) and i == 0 else f for i, f in enumerate(factors))
    return example(make(nn.Unflatten, dim, sizes), floats(*shape[:dim], size, *shape[dim:]))


@st.composite
def channel_shuffle(draw):
    """``[N, groups x per_group, *spatial]`` with channels read out group-interleaved."""
    groups, per_group = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    spatial = draw(st.lists(SIDE, min_size=1, max_size=2))
    return example(make(nn.ChannelShuffle, groups), floats(draw(BATCH), groups * per_group, *spatial))
