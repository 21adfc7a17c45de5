"""Small compositions models are made of: a depthwise-separable convolution and a ResNet basic
block (conv, BatchNorm, ReLU twice around a residual, a strided projection when the shape changes)."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, example, floats, make, sides


class DepthwiseSeparable(nn.Module):
    def __init__(self, channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)
        self.pointwise = nn.Conv2d(channels, out_channels, 1)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


class BasicBlock(nn.Module):
    """torchvision's ResNet basic block, sized down."""

    def __init__(self, channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()
        self.shortcut = nn.Identity()
        if stride != 1 or channels != out_channels:
            self.shortcut = nn.Sequential(nn.Conv2d(channels, out_channels, 1, stride, bias=False),
                                          nn.BatchNorm2d(out_channels))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


@st.composite
def depthwise_separable(draw):
    channels = draw(st.integers(1, 3))
    layer = make(DepthwiseSeparable, channels, draw(st.integers(1, 3)), draw(st.sampled_from([1, 3])))
    return example(layer, floats(draw(BATCH), channels, *draw(sides(2, 1, 5))))


@st.composite
def basic_block(draw):
    """Batches of at least two (BatchNorm's batch variance needs two values per channel)."""
    channels = draw(st.integers(1, 3))
    layer = make(BasicBlock, channels, draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    return example(layer, floats(draw(st.integers(2, 3)), channels, *draw(sides(2, 2, 5))))
