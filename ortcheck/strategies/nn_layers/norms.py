"""The BatchNorm, LayerNorm, GroupNorm, InstanceNorm, RMSNorm and local response norm families."""
from __future__ import annotations

import torch
from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, example, floats, make, sides


@st.composite
def batch_norm(draw, nd: int, eval: bool = False):
    """Train mode needs more than one value per channel; eval mode uses (random) running statistics."""
    channels = draw(SIDE)
    spatial = draw(sides(draw(st.integers(0, 1)) if nd == 1 else nd, 1, 4 if nd < 3 else 3))
    batch = draw(BATCH)
    if not eval and batch * torch.Size(spatial).numel() < 2:
        batch += 1
    cls = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}[nd]
    layer = make(cls, channels, momentum=draw(st.sampled_from([0.1, 0.5, None])), affine=draw(st.booleans()),
                 track_running_stats=eval or draw(st.booleans()))
    return example(layer, floats(batch, channels, *spatial), eval=eval)


@st.composite
def layer_norm(draw):
    """Over the last 1-2 sides, at least 2 elements: over one, the output is the bias whatever the input."""
    normalized = draw(st.lists(SIDE, min_size=1, max_size=2).filter(lambda s: torch.Size(s).numel() >= 2))
    affine = draw(st.booleans())
    layer = make(nn.LayerNorm, normalized, elementwise_affine=affine, bias=affine and draw(st.booleans()))
    return example(layer, floats(*draw(st.lists(SIDE, max_size=2)), *normalized))


@st.composite
def group_norm(draw):
    """At least 2 elements per group (as ``layer_norm``)."""
    groups, per_group = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    spatial = draw(st.lists(SIDE, max_size=2).filter(lambda s: per_group * torch.Size(s).numel() >= 2))
    layer = make(nn.GroupNorm, groups, groups * per_group, affine=draw(st.booleans()))
    return example(layer, floats(draw(BATCH), groups * per_group, *spatial))


@st.composite
def instance_norm(draw, nd: int):
    """Train mode needs more than one spatial element."""
    channels = draw(SIDE)
    spatial = draw(sides(nd).filter(lambda s: torch.Size(s).numel() >= 2))
    cls = {1: nn.InstanceNorm1d, 2: nn.InstanceNorm2d, 3: nn.InstanceNorm3d}[nd]
    layer = make(cls, channels, affine=True, track_running_stats=draw(st.booleans()))
    return example(layer, floats(draw(BATCH), channels, *spatial))


@st.composite
def rms_norm(draw):
    normalized = draw(st.lists(SIDE, min_size=1, max_size=2))
    layer = make(nn.RMSNorm, normalized, eps=draw(st.sampled_from([None, 1e-6])),
                 elementwise_affine=draw(st.booleans()))
    return example(layer, floats(*draw(st.lists(SIDE, max_size=2)), *normalized))


@st.composite
def local_response_norm(draw):
    """Across a window of channels, on ``[N, C, *spatial]`` (ranks 3 and 4)."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=2))
    layer = make(nn.LocalResponseNorm, draw(st.integers(1, 4)), alpha=draw(st.sampled_from([1e-4, 0.1, 1.0])),
                 beta=draw(st.sampled_from([0.75, 0.5])), k=draw(st.sampled_from([1.0, 2.0])))
    return example(layer, floats(draw(BATCH), draw(st.integers(1, 5)), *shape))


@st.composite
def cross_map_lrn2d(draw):
    """The legacy LRN across channels of ``[N, C, H, W]`` (its own autograd Function in eager, whose
    backward fails for a window of one channel, torch 2.13: "start (1) + length (1) exceeds dimension
    size": windows of 2-4)."""
    layer = make(nn.CrossMapLRN2d, draw(st.integers(2, 4)), alpha=draw(st.sampled_from([1e-4, 0.1])),
                 beta=draw(st.sampled_from([0.75, 0.5])), k=draw(st.sampled_from([1.0, 2.0])))
    return example(layer, floats(draw(BATCH), draw(st.integers(1, 5)), draw(SIDE), draw(SIDE)))
