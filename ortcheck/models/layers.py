"""Transformer pieces written out op by op, shared by the Bloom model and the layer-stack blocks.

Attention is spelled as MatMul/Div/Where/Softmax rather than ``scaled_dot_product_attention`` and the
causal mask comes from comparing positions rather than ``triu``, so the TorchScript exporter emits only
common ONNX ops (no fused attention, no Trilu) that every pipeline's gradient builder knows.
"""
from __future__ import annotations

import math

import torch
from torch import nn


def causal_mask(length: torch.Tensor | int, device: torch.device) -> torch.Tensor:
    """``[length, length]`` bool, True above the diagonal: the future positions a query must not see."""
    positions = torch.arange(length, device=device)
    return positions[None, :] > positions[:, None]


def optional_dropout(p: float | None) -> nn.Module:
    """``nn.Dropout(p)`` for a float, even 0.0 (in training mode the exporter then emits a Dropout node,
    as for Bloom's default), and no node at all for None."""
    return nn.Identity() if p is None else nn.Dropout(p)


class SelfAttention(nn.Module):
    """Multi-head self-attention over ``[batch, seq, hidden]``.

    ``head_dim`` defaults to ``hidden // heads``; giving it explicitly decouples the attention width
    from ``hidden`` (any ``heads``/``head_dim`` then fit any input width). ``key_bias=False`` drops
    the key projection's bias, whose gradient is identically zero (softmax ignores a shift per row):
    rounding leaves it at a few ulp of the cancelling terms, or exactly 0 by luck, which no oracle
    scale can judge.
    """

    def __init__(self, hidden: int, heads: int, head_dim: int | None = None, causal: bool = True,
                 dropout: float | None = None, key_bias: bool = True):
        super().__init__()
        if head_dim is None:
            if hidden % heads:
                raise ValueError(f"hidden={hidden} is not divisible by heads={heads}")
            head_dim = hidden // heads
        self.heads, self.head_dim, self.causal = heads, head_dim, causal
        inner = heads * head_dim
        self.query = nn.Linear(hidden, inner)
        self.key = nn.Linear(hidden, inner, bias=key_bias)
        self.value = nn.Linear(hidden, inner)
        self.dense = nn.Linear(inner, hidden)
        self.attention_dropout = optional_dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (self._split_heads(project(x)) for project in (self.query, self.key, self.value))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if self.causal:
            scores = scores.masked_fill(causal_mask(x.shape[1], x.device), torch.finfo(scores.dtype).min)
        probabilities = self.attention_dropout(torch.softmax(scores, dim=-1))
        return self.dense(self._merge_heads(probabilities @ v))

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        """``[batch, seq, heads * head_dim]`` -> ``[batch, heads, seq, head_dim]``."""
        return t.reshape(t.shape[0], t.shape[1], self.heads, self.head_dim).transpose(1, 2)

    def _merge_heads(self, t: torch.Tensor) -> torch.Tensor:
        t = t.transpose(1, 2)
        return t.reshape(t.shape[0], t.shape[1], self.heads * self.head_dim)

    def extra_repr(self) -> str:
        return f"heads={self.heads}, head_dim={self.head_dim}, causal={self.causal}"


class MLP(nn.Sequential):
    """Linear -> GELU -> Linear, widening by ``expansion`` in between (Bloom: 4)."""

    def __init__(self, hidden: int, expansion: int = 4, approximate: str = "none"):
        super().__init__(nn.Linear(hidden, expansion * hidden), nn.GELU(approximate=approximate),
                         nn.Linear(expansion * hidden, hidden))


class Residual(nn.Module):
    """``x + dropout(inner(norm(x)))``: a pre-LayerNorm residual sub-layer, or a plain one without norm."""

    def __init__(self, inner: nn.Module, hidden: int, pre_norm: bool = True, dropout: float | None = None,
                 eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps) if pre_norm else nn.Identity()
        self.inner = inner
        self.dropout = optional_dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.dropout(self.inner(self.norm(x)))
