"""Modules around layers whose call takes more than tensors: masks, offsets and weights become plain
positional inputs, tuple outputs become tensors, losses become the module."""
from __future__ import annotations

import torch.nn.functional as F
from torch import nn


class Call(nn.Module):
    """``layer(*inputs[:positional], **dict(zip(keywords, rest)), **constants)``, output ``pick`` of
    a tuple: optional masks, offsets and weights become plain positional inputs of the wrapped module."""

    def __init__(self, layer: nn.Module, positional: int, keywords: tuple[str, ...] = (), constants: tuple = (),
                 pick: int | None = None):
        super().__init__()
        self.layer, self.positional, self.keywords = layer, positional, keywords
        self.constants, self.pick = dict(constants), pick

    def forward(self, *inputs):
        rest = dict(zip(self.keywords, inputs[self.positional:]))
        out = self.layer(*inputs[:self.positional], **rest, **self.constants)
        return out if self.pick is None else out[self.pick]


class SharedAttention(nn.Module):
    """MultiheadAttention given one tensor as query, key and value (``self``) or as key and value
    (``memory``): the paths that pack the in-projection (``query is key``, ``key is value``)."""

    def __init__(self, attention: nn.MultiheadAttention, shared: str, keywords: tuple[str, ...] = ()):
        super().__init__()
        self.attention, self.shared, self.keywords = attention, shared, keywords

    def forward(self, *inputs):
        if self.shared == "self":
            (query, *masks), key = inputs, inputs[0]
        else:
            query, key, *masks = inputs
        return self.attention(query, key, key, need_weights=False, **dict(zip(self.keywords, masks)))[0]


class Attention(nn.Module):
    """``F.scaled_dot_product_attention`` (no parameters: input gradients carry the check)."""

    def __init__(self, is_causal: bool = False, scale: float | None = None):
        super().__init__()
        self.is_causal, self.scale = is_causal, scale

    def forward(self, q, k, v, *mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[0] if mask else None, dropout_p=0.0,
                                              is_causal=self.is_causal, scale=self.scale)


class Recurrent(nn.Module):
    """An RNN/GRU/LSTM from an optional initial state, its outputs flattened: (out, h_n[, c_n])."""

    def __init__(self, rnn: nn.RNNBase):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *state):
        if isinstance(self.rnn, nn.LSTM):
            out, (h, c) = self.rnn(x, tuple(state) if state else None)
            return out, h, c
        out, h = self.rnn(x, state[0] if state else None)
        return out, h


class Cell(nn.Module):
    """An RNNCell/GRUCell/LSTMCell from an optional state, LSTM's (h, c) as two outputs."""

    def __init__(self, cell: nn.RNNCellBase):
        super().__init__()
        self.cell = cell

    def forward(self, x, *state):
        if isinstance(self.cell, nn.LSTMCell):
            return self.cell(x, tuple(state) if state else None)
        return self.cell(x, state[0] if state else None)


class PoolUnpool(nn.Module):
    """A max pool returning its indices, then the unpool that puts the maxima back."""

    def __init__(self, pool: nn.Module, unpool: nn.Module):
        super().__init__()
        self.pool, self.unpool = pool, unpool

    def forward(self, x):
        pooled, indices = self.pool(x)
        return self.unpool(pooled, indices)


class LossOf(nn.Module):
    """A loss module as the wrapped module: its output is the loss."""

    def __init__(self, loss: nn.Module):
        super().__init__()
        self.loss = loss

    def forward(self, prediction, target):
        return self.loss(prediction, target)
