"""The blocks a layer stack is composed of: small frozen specs that build ``nn.Module`` s.

A spec holds only what distinguishes one block from another (no input width), so any sequence of
specs composes: each is built against the width the previous one produces. Specs repr as valid
Python, so a falsifying example reads (and re-runs) as written.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable

import torch
from torch import nn

from ortcheck.models.layers import MLP, Residual, SelfAttention
from ortcheck.models.linear4bit import Linear4Bit, quantize_linears
from ortcheck.strategies.bnb4 import QUANT_TYPES, Weight4Bit

# simplest first: hypothesis shrinks towards the front
ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "gelu": nn.GELU,
    "gelu_tanh": functools.partial(nn.GELU, approximate="tanh"),
}


class Block:
    """A spec: ``build(width)`` makes the module, ``out_width(width)`` says what it produces."""

    needs_sequence = False  # True: input must be [batch, seq, width]

    def build(self, width: int) -> nn.Module:
        raise NotImplementedError

    def out_width(self, width: int) -> int:
        return width


@dataclasses.dataclass(frozen=True)
class Linear(Block):
    out: int

    def build(self, width):
        return nn.Linear(width, self.out)

    def out_width(self, width):
        return self.out

    def __str__(self):
        return f"linear({self.out})"


@dataclasses.dataclass(frozen=True)
class LayerNorm(Block):
    def build(self, width):
        return nn.LayerNorm(width)

    def __str__(self):
        return "layernorm"


@dataclasses.dataclass(frozen=True)
class Activation(Block):
    kind: str

    def __post_init__(self):
        if self.kind not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.kind!r}; valid: {', '.join(ACTIVATIONS)}")

    def build(self, width):
        return ACTIVATIONS[self.kind]()

    def __str__(self):
        return self.kind


@dataclasses.dataclass(frozen=True)
class Dropout(Block):
    p: float

    def build(self, width):
        return nn.Dropout(self.p)

    def __str__(self):
        return f"dropout({self.p})"


@dataclasses.dataclass(frozen=True)
class ResidualMLP(Block):
    """``x + MLP(norm(x))`` with a GELU MLP widening by ``expansion``; ``pre_norm=False``: no norm."""

    expansion: int
    pre_norm: bool

    def build(self, width):
        return Residual(MLP(width, self.expansion), width, pre_norm=self.pre_norm)

    def __str__(self):
        return f"residual_mlp(x{self.expansion}{', pre_norm' if self.pre_norm else ''})"


@dataclasses.dataclass(frozen=True)
class Attention(Block):
    """Self-attention of ``heads`` x ``head_dim`` (independent of the input width), optionally causal."""

    heads: int
    head_dim: int
    causal: bool
    dropout: float | None = None  # on the attention probabilities; None: no Dropout node

    needs_sequence = True

    def build(self, width):
        return SelfAttention(width, self.heads, self.head_dim, causal=self.causal, dropout=self.dropout)

    def __str__(self):
        extras = ", causal" if self.causal else ""
        extras += f", dropout={self.dropout}" if self.dropout is not None else ""
        return f"attention({self.heads}x{self.head_dim}{extras})"


@dataclasses.dataclass(frozen=True)
class TransformerLayer(Block):
    """A pre-LN transformer layer: ``x + drop(attn(norm(x)))`` then ``x + drop(mlp(norm(x)))``.

    Its input feeds exactly a LayerNormalization and the residual Add with a Softmax between them:
    the layer boundary that layer-wise recompute keeps stashed. ``dropout`` applies to the attention
    probabilities and both residual branches (None: no Dropout nodes).
    """

    heads: int
    head_dim: int
    expansion: int
    dropout: float | None = None

    needs_sequence = True

    def build(self, width):
        attention = SelfAttention(width, self.heads, self.head_dim, causal=True, dropout=self.dropout, key_bias=False)
        return nn.Sequential(Residual(attention, width, dropout=self.dropout),
                             Residual(MLP(width, self.expansion), width, dropout=self.dropout))

    def __str__(self):
        extras = f", dropout={self.dropout}" if self.dropout is not None else ""
        return f"transformer({self.heads}x{self.head_dim}, mlp x{self.expansion}{extras})"


@dataclasses.dataclass(frozen=True)
class HalfStorage(Block):
    """``|x|`` rounded through float16 and back, then a Linear: activations kept in half precision.

    The float32 value the Linear's gradient reads is a Cast of a smaller float16 one whose producer
    cannot be recomputed (Abs, Cast): the case recompute-with-compromise (strategy 2) exists for.
    """

    out: int

    def build(self, width):
        return nn.Sequential(_AbsHalfRoundTrip(), nn.Linear(width, self.out))

    def out_width(self, width):
        return self.out

    def __str__(self):
        return f"half_storage({self.out})"


class _AbsHalfRoundTrip(nn.Module):
    def forward(self, x):
        return x.abs().half().to(x.dtype)  # the float64 twin rounds through float16 alike


@dataclasses.dataclass(frozen=True)
class Bnb4Linear(Block):
    """A frozen 4-bit linear layer (:class:`ortcheck.models.linear4bit.Linear4Bit`): its float weight
    is drawn as :class:`Weight4Bit` ``kind`` (zeros, outliers, constant blocks) and scaled by
    1/sqrt(width) before quantizing; bias and LoRA adapters (alpha = 2 x rank) optional; the packed
    weight a frozen parameter or a buffer (``packed_as``)."""

    out: int
    block_size: int = 16
    quant_type: str = "nf4"
    kind: str = "normal"
    bias: bool = True
    lora_rank: int = 0
    packed_as: str = "parameter"

    def build(self, width):
        seed = int(torch.randint(0, 2**31 - 1, ()))  # from the stack's seeded generator
        weight = Weight4Bit(self.out, width, self.block_size, self.quant_type, self.kind, seed).tensor()
        bias = 0.1 * torch.randn(self.out) if self.bias else None
        return Linear4Bit(weight / math.sqrt(width), bias, self.block_size, QUANT_TYPES[self.quant_type],
                          self.lora_rank, lora_alpha=2.0 * self.lora_rank, packed_as=self.packed_as)

    def out_width(self, width):
        return self.out

    def __str__(self):
        extras = "".join([", bias" * self.bias, f", lora r{self.lora_rank}" * bool(self.lora_rank),
                          ", in a buffer" * (self.packed_as == "buffer")])
        return f"{self.quant_type}({self.out}, block {self.block_size}, {self.kind}{extras})"


@dataclasses.dataclass(frozen=True)
class QLoRA:
    """What turns a built stack into a QLoRA model: every ``nn.Linear`` becomes 4-bit with LoRA
    adapters of ``lora_rank`` and every other parameter is frozen (:func:`quantize_linears`)."""

    block_size: int = 16
    quant_type: str = "nf4"
    lora_rank: int = 1
    lora_alpha: float = 2.0

    def apply(self, module: nn.Module) -> nn.Module:
        return quantize_linears(module, self.block_size, QUANT_TYPES[self.quant_type], self.lora_rank,
                                self.lora_alpha)

    def __str__(self):
        return f"qlora({self.quant_type}, block {self.block_size}, r{self.lora_rank}, alpha {self.lora_alpha})"


# ---- what feeds the first block


@dataclasses.dataclass(frozen=True)
class Features:
    """Float inputs ``[batch, (seq,) width]``, fed to the first block as they are."""

    width: int

    def modules(self) -> list[nn.Module]:
        return []

    def make(self, shape: tuple[int, ...], generator: torch.Generator, requires_grad: bool) -> torch.Tensor:
        return torch.randn(*shape, self.width, generator=generator).requires_grad_(requires_grad)

    def __str__(self):
        return f"features({self.width})"


@dataclasses.dataclass(frozen=True)
class Tokens:
    """Integer token inputs ``[batch, (seq)]`` embedded into ``width`` features."""

    vocab: int
    width: int

    def modules(self) -> list[nn.Module]:
        return [nn.Embedding(self.vocab, self.width)]

    def make(self, shape: tuple[int, ...], generator: torch.Generator, requires_grad: bool) -> torch.Tensor:
        return torch.randint(0, self.vocab, shape, generator=generator)

    def __str__(self):
        return f"tokens({self.vocab}->{self.width})"
