"""Distances and similarities between two inputs: CosineSimilarity, PairwiseDistance."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, example, floats, make
from .wrappers import Call


@st.composite
def cosine_similarity(draw):
    """Along a drawn axis of two same-shaped inputs (at least 2 features: one feature is ±1 exactly)."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=3))
    dim = draw(st.integers(0, len(shape) - 1))
    shape[dim] = max(2, shape[dim])
    layer = make(nn.CosineSimilarity, dim=dim - draw(st.sampled_from([0, len(shape)])), eps=draw(st.sampled_from([1e-8, 1e-3])))
    return example(make(Call, layer, 2), floats(*shape), floats(*shape))


@st.composite
def pairwise_distance(draw):
    """p-norm of the difference over the last axis (p 1, 2 or 3; kept or not), batched or not."""
    shape = [*draw(st.lists(BATCH, max_size=1)), draw(st.integers(2, 4))]
    layer = make(nn.PairwiseDistance, p=draw(st.sampled_from([1.0, 2.0, 3.0])), eps=draw(st.sampled_from([1e-6, 1e-3])),
                 keepdim=draw(st.booleans()))
    return example(make(Call, layer, 2), floats(*shape), floats(*shape))
