"""The module every transition sequence drives.

Small on purpose (an export costs milliseconds), yet everything a transition is about changes its
output: the input structure, each Python value (a bool branch, a str choice, an int loop count, and a
number, int or float, multiplied into the tensors: a trace bakes it in as a constant), the mode (``if self.training``), a Python
attribute (``self.gain``), and each parameter. A pipeline that reuses a stale graph computes
something else, and eager PyTorch shows it.
"""
from __future__ import annotations

import torch

FEATURES = 4
OUTPUTS = 3
PARAMETERS = ("lin.weight", "lin.bias", "scale")


class TransitionSubject(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(FEATURES, OUTPUTS)
        self.scale = torch.nn.Parameter(torch.tensor([1.0, -0.5, 2.0]))
        self.gain = 1.0

    def forward(self, x, y=None, *, flag=None, reduction=None, repeats=None, factor=None):
        h = self.lin(x.to(self.lin.weight.dtype)) * self.scale * self.gain
        h = h * (0.5 if self.training else 2.0)
        if y is not None:
            h = h + y
        if flag:
            h = torch.tanh(h)
        for _ in range(repeats or 0):  # a Python int the trace unrolls
            h = h * 1.5 + 0.25
        if factor is not None:  # graph arithmetic with a Python number
            h = h * factor - factor / 4
        if reduction == "sum":
            return h.sum(-1)
        if reduction == "mean":
            return h.mean(-1)
        return h
