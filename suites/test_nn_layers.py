"""Property: layer by layer, the torch.nn modules models are built from give eager's outputs,
parameter gradients, input gradients and buffers through the pipeline.

An OpInfo for modules: the op catalogue (``test_op_grads``) checks functions on their own, but a
user wraps ``nn.Conv2d`` or ``nn.LSTM``, whose parameters, buffers (BatchNorm's running statistics)
and train/eval behaviour are the module's. Each layer has a hypothesis builder drawing its
configuration and input shapes; each example builds the layer under a seed, wraps a copy, runs
forward and a backward from seeded cotangents, and the float64 oracle judges the output, every
parameter's gradient, every float input's gradient and the buffers after the step. Edges a pipeline
may get wrong on their own (label smoothing, padding modes, masks, uneven adaptive pooling, eval
mode) are layers of their own, so a failing id names what every one of its examples exercises.

Inputs are continuous random values: no draw sits on a kink (a ReLU at 0, a max-pool tie, an L1
loss with prediction equal to target), where float32 and float64 eager could take different
branches and the oracle would judge a discontinuity. A layer the pipeline can't export or
differentiate fails naming it.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ortcheck.checks import RUNS, assert_matches_oracle, input_runs, module_runs
from ortcheck.impls import Capability
from ortcheck.profiles import costly

pytestmark = pytest.mark.requires(Capability.GRAD_PARITY)

SEEDS = st.integers(0, 2**16)
SIDE = st.integers(1, 4)
BATCH = st.integers(1, 3)


# ---- drawn values that read as code ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Build:
    """A constructor call kept as a value: built under the example's seed, printed as code."""

    cls: type
    args: tuple = ()
    kwargs: tuple = ()

    def __call__(self):
        def built(value):  # a tensor argument (a class weight) becomes a buffer: each module its own
            if isinstance(value, torch.Tensor):
                return value.clone()
            return value() if isinstance(value, Build) else value

        return self.cls(*map(built, self.args), **{key: built(value) for key, value in self.kwargs})

    def __repr__(self):
        prefix = "nn." if getattr(nn, self.cls.__name__, None) is self.cls else ""
        parts = [*map(repr, self.args), *(f"{key}={value!r}" for key, value in self.kwargs)]
        return f"{prefix}{self.cls.__name__}({', '.join(parts)})"


def make(cls, *args, **kwargs) -> Build:
    return Build(cls, args, tuple(kwargs.items()))


@dataclasses.dataclass(frozen=True)
class Input:
    """One seeded input, printed as ``kind[shape]``. Float kinds require grad: ``float`` (randn),
    ``wide`` (3 x randn, reaching the saturated and linear parts of activations), ``unit`` (in
    [0.01, 0.99]), ``positive`` (in [0.1, 1]). The rest don't: ``index:<n>`` (integers in [0, n)),
    ``target:<n>:<ignore>`` (class labels, some of them ``ignore`` but never the first: n > 1 if
    ``ignore`` is a class), ``filled:<v>`` (all v), ``masked`` (bool, True = excluded, never the
    first entry of the last axis), ``allowed`` (bool, True = attended, always the first), ``causal``
    (bool, True above the diagonal), ``offsets:<n>`` / ``offsets_last:<n>`` (EmbeddingBag's bag
    starts in [0, n], the first 0; the latter ending with n)."""

    shape: tuple[int, ...]
    kind: str = "float"

    def make(self, generator: torch.Generator) -> torch.Tensor:
        kind, *args = self.kind.split(":")
        shape = self.shape
        if kind in ("float", "wide", "unit", "positive"):
            values = {"float": lambda: torch.randn(shape, generator=generator),
                      "wide": lambda: 3 * torch.randn(shape, generator=generator),
                      "unit": lambda: torch.rand(shape, generator=generator).clamp(0.01, 0.99),
                      "positive": lambda: 0.1 + 0.9 * torch.rand(shape, generator=generator)}[kind]()
            return values.requires_grad_(True)
        if kind == "index":
            return torch.randint(0, int(args[0]), shape, generator=generator)
        if kind == "target":
            labels = torch.randint(0, int(args[0]), shape, generator=generator)
            ignore = int(args[1])
            if labels.view(-1)[0] == ignore:
                labels.view(-1)[0] = (ignore + 1) % int(args[0])
            ignored = torch.rand(shape, generator=generator) < 0.3
            ignored.view(-1)[0] = False
            return torch.where(ignored, torch.full_like(labels, ignore), labels)
        if kind == "filled":
            return torch.full(shape, int(args[0]))
        if kind in ("masked", "allowed"):
            mask = torch.rand(shape, generator=generator) < 0.4
            mask[..., 0] = False
            return mask if kind == "masked" else ~mask
        if kind == "causal":
            return torch.ones(shape, dtype=torch.bool).triu(1)
        if kind in ("offsets", "offsets_last"):
            total, bags = int(args[0]), shape[0] - (kind == "offsets_last")
            starts = torch.randint(0, total + 1, (bags,), generator=generator).sort().values
            starts[0] = 0
            return torch.cat([starts, torch.tensor([total])]) if kind == "offsets_last" else starts
        raise ValueError(f"unknown input kind {self.kind!r}")

    def __repr__(self):
        return f"{self.kind}{list(self.shape)}"


@dataclasses.dataclass(frozen=True)
class Example:
    """A layer and its inputs; ``eval``: random running statistics, then ``.eval()`` before wrapping."""

    module: Build
    inputs: tuple[Input, ...]
    eval: bool = False

    def __repr__(self):
        return f"{self.module!r}{'.eval()' if self.eval else ''} on ({', '.join(map(repr, self.inputs))})"

    def _repr_pretty_(self, printer, cycle):  # hypothesis prints a falsifying example with this
        printer.text(repr(self))


def example(module: Build, *inputs: Input, eval: bool = False) -> Example:
    return Example(module, inputs, eval)


def floats(*shape: int, kind: str = "float") -> Input:
    return Input(tuple(shape), kind)


# ---- modules around layers whose call takes more than tensors ----------------------------------


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


class LossOf(nn.Module):
    """A loss module as the wrapped module: its output is the loss."""

    def __init__(self, loss: nn.Module):
        super().__init__()
        self.loss = loss

    def forward(self, prediction, target):
        return self.loss(prediction, target)


# ---- builders ----------------------------------------------------------------------------------


def sides(n: int, low: int = 1, high: int = 4):
    return st.lists(st.integers(low, high), min_size=n, max_size=n)


@st.composite
def linear(draw):
    n_in, n_out = draw(SIDE), draw(SIDE)
    lead = draw(st.lists(SIDE, max_size=2))
    return example(make(nn.Linear, n_in, n_out, bias=draw(st.booleans())), floats(*lead, n_in))


@st.composite
def bilinear(draw):
    n1, n2, n_out, batch = draw(SIDE), draw(SIDE), draw(SIDE), draw(BATCH)
    return example(make(nn.Bilinear, n1, n2, n_out, bias=draw(st.booleans())), floats(batch, n1), floats(batch, n2))


@st.composite
def conv(draw, nd: int, padding_modes=("zeros",)):
    """Grouped, strided, dilated, ``padding="same"``; every input side at least the window."""
    groups = draw(st.integers(1, 2))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel, dilation = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    padding_mode = draw(st.sampled_from(padding_modes))
    span = dilation * (kernel - 1) + 1
    if draw(st.booleans()):
        padding, stride, low = "same", 1, 1
        pad = span - 1 - (span - 1) // 2  # the larger side of "same"
    else:
        pad, stride = draw(st.integers(0, 2)), draw(st.integers(1, 2))
        padding, low = pad, max(1, span - 2 * pad)
    if padding_mode != "zeros":
        low = max(low, pad + 1)  # reflect: a pad smaller than the side
    shape = draw(sides(nd, low, max(low, 5 - nd)))
    cls = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[nd]
    layer = make(cls, c_in, c_out, kernel, stride=stride, padding=padding, dilation=dilation, groups=groups,
                 bias=draw(st.booleans()), padding_mode=padding_mode)
    return example(layer, floats(draw(BATCH), c_in, *shape))


@st.composite
def conv_transpose(draw, nd: int):
    """Padding at most half the dilated window, so every output side is at least 1."""
    groups = draw(st.integers(1, 2))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel, stride, dilation = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    padding = draw(st.integers(0, dilation * (kernel - 1) // 2))
    output_padding = draw(st.integers(0, max(stride, dilation) - 1))
    cls = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d}[nd]
    layer = make(cls, c_in, c_out, kernel, stride=stride, padding=padding, output_padding=output_padding,
                 groups=groups, bias=draw(st.booleans()), dilation=dilation)
    return example(layer, floats(draw(BATCH), c_in, *draw(sides(nd))))


@st.composite
def batch_norm(draw, nd: int, eval: bool = False):
    """Train mode needs more than one value per channel; eval mode uses (random) running statistics."""
    channels = draw(SIDE)
    spatial = draw(sides(draw(st.integers(0, 1)) if nd == 1 else 2))
    batch = draw(BATCH)
    if not eval and batch * torch.Size(spatial).numel() < 2:
        batch += 1
    cls = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d}[nd]
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
    cls = {1: nn.InstanceNorm1d, 2: nn.InstanceNorm2d}[nd]
    layer = make(cls, channels, affine=True, track_running_stats=draw(st.booleans()))
    return example(layer, floats(draw(BATCH), channels, *spatial))


@st.composite
def rms_norm(draw):
    normalized = draw(st.lists(SIDE, min_size=1, max_size=2))
    layer = make(nn.RMSNorm, normalized, eps=draw(st.sampled_from([None, 1e-6])),
                 elementwise_affine=draw(st.booleans()))
    return example(layer, floats(*draw(st.lists(SIDE, max_size=2)), *normalized))


@st.composite
def embedding(draw, padding_idx: bool = False, scale_grad_by_freq: bool = False):
    """Indices [T] or [B, T]; ``padding_idx`` (its row gets no gradient) counted from either end."""
    count, dim = draw(st.integers(1, 6)), draw(SIDE)
    padding_idx = draw(st.integers(-count, count - 1)) if padding_idx else None
    layer = make(nn.Embedding, count, dim, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq)
    return example(layer, Input(tuple(draw(st.lists(SIDE, min_size=1, max_size=2))), f"index:{count}"))


@st.composite
def embedding_bag(draw, offsets: bool):
    """Bags as rows of a 2-D input, or (``offsets``) as a 1-D input cut at drawn offsets (empty bags
    included); per-sample weights with mode sum."""
    count, dim, mode = draw(st.integers(1, 6)), draw(SIDE), draw(st.sampled_from(["sum", "mean"]))
    padding_idx = draw(st.none() | st.integers(0, count - 1))
    weighted = mode == "sum" and draw(st.booleans())
    keywords, inputs = (), []
    if offsets:
        total, bags, last = draw(st.integers(1, 6)), draw(BATCH), draw(st.booleans())
        indices = Input((total,), f"index:{count}")
        starts = Input((bags + 1,), f"offsets_last:{total}") if last else Input((bags,), f"offsets:{total}")
        inputs, keywords = [starts], ("offsets",)
        layer = make(nn.EmbeddingBag, count, dim, mode=mode, padding_idx=padding_idx, include_last_offset=last)
    else:
        indices = Input((draw(BATCH), draw(SIDE)), f"index:{count}")
        layer = make(nn.EmbeddingBag, count, dim, mode=mode, padding_idx=padding_idx)
    if weighted:
        inputs, keywords = [*inputs, floats(*indices.shape)], (*keywords, "per_sample_weights")
    return example(make(Call, layer, 1, keywords), indices, *inputs)


@st.composite
def multihead_attention(draw, shared: str | None, masks: bool = False):
    """One tensor as query, key and value (``shared="self"``), one as key and value (``"memory"``)
    or three (``None``: key and value of the embedding's width or their own ``kdim``/``vdim``);
    ``masks``: a key padding mask and/or an attention mask (2-D or per head), which never exclude
    the first key, so no row is all masked."""
    heads, head_dim, batch_first = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.booleans())
    embed, batch, length = heads * head_dim, draw(BATCH), draw(SIDE)
    key_length = length if shared == "self" else draw(SIDE)
    kdim, vdim = (draw(st.none() | SIDE), draw(st.none() | SIDE)) if shared is None else (None, None)
    attention = make(nn.MultiheadAttention, embed, heads, bias=draw(st.booleans()), batch_first=batch_first,
                     kdim=kdim, vdim=vdim)

    def sequence(length, width):
        return floats(batch, length, width) if batch_first else floats(length, batch, width)

    keywords, mask_inputs = [], []
    if masks:
        which = draw(st.sampled_from(["key_padding_mask", "attn_mask", "both"]))
        if which in ("key_padding_mask", "both"):
            keywords.append("key_padding_mask")
            mask_inputs.append(Input((batch, key_length), "masked"))
        if which in ("attn_mask", "both"):
            keywords.append("attn_mask")
            shape = draw(st.sampled_from([(length, key_length), (batch * heads, length, key_length)]))
            mask_inputs.append(Input(shape, "masked"))
    if shared == "self":
        return example(make(SharedAttention, attention, shared, tuple(keywords)), sequence(length, embed),
                       *mask_inputs)
    if shared == "memory":
        return example(make(SharedAttention, attention, shared, tuple(keywords)), sequence(length, embed),
                       sequence(key_length, embed), *mask_inputs)
    layer = make(Call, attention, 3, tuple(keywords), (("need_weights", False),), pick=0)
    return example(layer, sequence(length, embed), sequence(key_length, kdim or embed),
                   sequence(key_length, vdim or embed), *mask_inputs)


@st.composite
def sdpa(draw, variant: str):
    """``variant``: ``plain``, ``causal`` (``is_causal=True``) or ``mask`` (a bool mask attending to at
    least the first key, or a float mask added to the scores, whose gradient is checked too)."""
    batch, heads, length, key_length = draw(BATCH), draw(st.integers(1, 2)), draw(SIDE), draw(SIDE)
    width, value_width = draw(SIDE), draw(SIDE)
    q, k, v = floats(batch, heads, length, width), floats(batch, heads, key_length, width), \
        floats(batch, heads, key_length, value_width)
    scale = draw(st.none() | st.sampled_from([0.5, 2.0]))
    if variant == "mask":
        shape = draw(st.sampled_from([(length, key_length), (batch, heads, length, key_length)]))
        mask = Input(shape, draw(st.sampled_from(["allowed", "float"])))
        return example(make(Attention, scale=scale), q, k, v, mask)
    return example(make(Attention, is_causal=variant == "causal", scale=scale), q, k, v)


def _transformer_config(draw) -> tuple[int, dict]:
    heads, head_dim = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    return heads * head_dim, dict(nhead=heads, dim_feedforward=draw(SIDE), dropout=0.0,
                                  activation=draw(st.sampled_from(["relu", "gelu"])),
                                  batch_first=draw(st.booleans()), norm_first=draw(st.booleans()),
                                  bias=draw(st.booleans()))


@st.composite
def transformer_encoder_layer(draw):
    """A causal mask and/or a key padding mask (never excluding the first key)."""
    d_model, config = _transformer_config(draw)
    batch, length = draw(BATCH), draw(SIDE)
    src = floats(batch, length, d_model) if config["batch_first"] else floats(length, batch, d_model)
    keywords, masks = [], []
    if draw(st.booleans()):
        keywords.append("src_mask")
        masks.append(Input((length, length), "causal"))
    if draw(st.booleans()):
        keywords.append("src_key_padding_mask")
        masks.append(Input((batch, length), "masked"))
    layer = make(nn.TransformerEncoderLayer, d_model, **config)
    return example(make(Call, layer, 1, tuple(keywords)), src, *masks)


@st.composite
def transformer_decoder_layer(draw):
    """Optionally a causal target mask and a memory key padding mask."""
    d_model, config = _transformer_config(draw)
    batch, length, memory_length = draw(BATCH), draw(SIDE), draw(SIDE)

    def sequence(length):
        return floats(batch, length, d_model) if config["batch_first"] else floats(length, batch, d_model)

    keywords, masks = [], []
    if draw(st.booleans()):
        keywords.append("tgt_mask")
        masks.append(Input((length, length), "causal"))
    if draw(st.booleans()):
        keywords.append("memory_key_padding_mask")
        masks.append(Input((batch, memory_length), "masked"))
    layer = make(nn.TransformerDecoderLayer, d_model, **config)
    return example(make(Call, layer, 2, tuple(keywords)), sequence(length), sequence(memory_length), *masks)


@st.composite
def recurrent(draw, cls: type):
    """1-2 layers, either direction, batch first or not, from zeros or a drawn initial state."""
    n_in, hidden, layers = draw(SIDE), draw(SIDE), draw(st.integers(1, 2))
    batch_first, bidirectional = draw(st.booleans()), draw(st.booleans())
    batch, length = draw(BATCH), draw(SIDE)
    extra = dict(nonlinearity=draw(st.sampled_from(["tanh", "relu"]))) if cls is nn.RNN else {}
    rnn = make(cls, n_in, hidden, num_layers=layers, bias=draw(st.booleans()), batch_first=batch_first,
               bidirectional=bidirectional, **extra)
    x = floats(batch, length, n_in) if batch_first else floats(length, batch, n_in)
    state = [floats(layers * (2 if bidirectional else 1), batch, hidden)] if draw(st.booleans()) else []
    if state and cls is nn.LSTM:
        state *= 2
    return example(make(Recurrent, rnn), x, *state)


@st.composite
def pool(draw, cls: type, nd: int):
    """Max or average windows with stride, padding (at most half the window) and ceil mode."""
    kernel = draw(st.integers(1, 3))
    stride = draw(st.none() | st.integers(1, 3))
    padding = draw(st.integers(0, kernel // 2))
    kwargs = dict(stride=stride, padding=padding, ceil_mode=draw(st.booleans()))
    span = kernel
    if cls in (nn.MaxPool1d, nn.MaxPool2d):
        kwargs["dilation"] = draw(st.integers(1, 2))
        span = kwargs["dilation"] * (kernel - 1) + 1
    else:
        kwargs["count_include_pad"] = draw(st.booleans())
    # At least one whole window per side: a max-pool window lying entirely in the padding gives
    # -inf, and torch 2.13's backward then corrupts the heap and aborts the process (eager itself:
    # MaxPool1d(2, padding=1, ceil_mode=True, dilation=2) on float64 [1, 3, 1]).
    shape = draw(sides(nd, span, 5))
    return example(make(cls, kernel, **kwargs), floats(draw(BATCH), draw(SIDE), *shape))


@st.composite
def adaptive_pool(draw, nd: int, uneven: bool):
    """Output sizes dividing the input's, or (``uneven``) not, with overlapping windows."""
    if uneven:  # every output side 2-3 and its input side strictly between it and twice it
        out = draw(sides(nd, 2, 3))
        shape = [size + draw(st.integers(1, size - 1)) for size in out]
    else:
        out = draw(sides(nd, 1, 3))
        shape = [size * draw(st.integers(1, 2)) for size in out]
    cls = {1: nn.AdaptiveAvgPool1d, 2: nn.AdaptiveAvgPool2d}[nd]
    return example(make(cls, out[0] if nd == 1 else tuple(out)), floats(draw(BATCH), draw(SIDE), *shape))


@st.composite
def activation(draw, cls: type, **kwargs):
    """On inputs of rank 1-4 spread wide enough to reach saturation and linear parts; ``kwargs``
    maps a constructor argument to its strategy."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=4))
    drawn = {name: draw(strategy) for name, strategy in kwargs.items()}
    if "dim" in drawn:
        drawn["dim"] = drawn["dim"] % len(shape) - draw(st.sampled_from([0, len(shape)]))
    return example(make(cls, **drawn), floats(*shape, kind="wide"))


REDUCTIONS = st.sampled_from(["mean", "sum", "none"])


@st.composite
def class_loss(draw, cls: type, ignore_index: bool = False, label_smoothing: bool = False,
               probabilities: bool = False, all_ignored: bool = False):
    """Logits [N, C] or [N, C, d] against class labels (some ``ignore_index``, never all; or
    ``all_ignored``, where eager's mean is 0/0 but its gradient 0) or class probabilities, with
    optional class weights."""
    batch, extra = draw(BATCH), draw(st.lists(SIDE, max_size=1))
    classes = draw(st.integers(2 if ignore_index else 1, 4))
    kwargs = dict(reduction=draw(REDUCTIONS))
    if draw(st.booleans()):
        kwargs["weight"] = torch.tensor(draw(st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=classes,
                                                      max_size=classes)))
    if label_smoothing:
        kwargs["label_smoothing"] = draw(st.sampled_from([0.05, 0.1, 0.5]))
    if probabilities:
        return example(make(LossOf, make(cls, **kwargs)), floats(batch, classes, *extra),
                       floats(batch, classes, *extra, kind="positive"))
    labels = f"index:{classes}"
    if all_ignored:
        kwargs["ignore_index"] = ignored = draw(st.sampled_from([-100, 0]))
        labels = f"filled:{ignored}"
    elif ignore_index:
        kwargs["ignore_index"] = ignored = draw(st.sampled_from([-100, 0, classes - 1]))
        labels = f"target:{classes}:{ignored}"
    return example(make(LossOf, make(cls, **kwargs)), floats(batch, classes, *extra), Input((batch, *extra), labels))


@st.composite
def pointwise_loss(draw, cls: type, target: str = "float", **kwargs):
    """Prediction and target of one drawn shape, both requiring grad."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=3))
    drawn = {name: draw(strategy) for name, strategy in kwargs.items()}
    return example(make(LossOf, make(cls, reduction=draw(REDUCTIONS), **drawn)), floats(*shape),
                   floats(*shape, kind=target))


@st.composite
def bce_with_logits(draw):
    shape = draw(st.lists(SIDE, min_size=1, max_size=3))
    kwargs = dict(reduction=draw(REDUCTIONS))
    if draw(st.booleans()):
        kwargs["pos_weight"] = torch.tensor(draw(st.lists(st.sampled_from([0.5, 1.0, 3.0]), min_size=shape[-1],
                                                          max_size=shape[-1])))
    return example(make(LossOf, make(nn.BCEWithLogitsLoss, **kwargs)), floats(*shape), floats(*shape, kind="unit"))


@st.composite
def kl_div(draw):
    """Log-probabilities against probabilities, or against log-probabilities (``log_target``)."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=3))
    log_target = draw(st.booleans())
    layer = make(nn.KLDivLoss, reduction=draw(st.sampled_from(["batchmean", "mean", "sum", "none"])),
                 log_target=log_target)
    return example(make(LossOf, layer), floats(*shape), floats(*shape, kind="float" if log_target else "positive"))


# ---- the registry ------------------------------------------------------------------------------

DIMS = st.integers(0, 3)  # wrapped into the input's rank, then negative or not

LAYERS: dict[str, st.SearchStrategy[Example]] = {
    "Linear": linear(),
    "Bilinear": bilinear(),
    "Conv1d": conv(1),
    "Conv2d": conv(2),
    "Conv3d": conv(3),
    "Conv2d_padding_mode": conv(2, padding_modes=("reflect", "replicate", "circular")),
    "ConvTranspose1d": conv_transpose(1),
    "ConvTranspose2d": conv_transpose(2),
    "BatchNorm1d": batch_norm(1),
    "BatchNorm2d": batch_norm(2),
    "BatchNorm1d_eval": batch_norm(1, eval=True),
    "BatchNorm2d_eval": batch_norm(2, eval=True),
    "LayerNorm": layer_norm(),
    "GroupNorm": group_norm(),
    "InstanceNorm1d": instance_norm(1),
    "InstanceNorm2d": instance_norm(2),
    "RMSNorm": rms_norm(),
    "Embedding": embedding(),
    "Embedding_padding_idx": embedding(padding_idx=True),
    "Embedding_scale_grad_by_freq": embedding(scale_grad_by_freq=True),
    "EmbeddingBag": embedding_bag(offsets=False),
    "EmbeddingBag_offsets": embedding_bag(offsets=True),
    "MultiheadAttention": multihead_attention(shared="self"),
    "MultiheadAttention_memory": multihead_attention(shared="memory"),
    "MultiheadAttention_cross": multihead_attention(shared=None),
    "MultiheadAttention_masks": multihead_attention(shared=None, masks=True),  # packed paths: ids of their own
    "scaled_dot_product_attention": sdpa("plain"),
    "scaled_dot_product_attention_causal": sdpa("causal"),
    "scaled_dot_product_attention_mask": sdpa("mask"),
    "TransformerEncoderLayer": transformer_encoder_layer(),
    "TransformerDecoderLayer": transformer_decoder_layer(),
    "RNN": recurrent(nn.RNN),
    "LSTM": recurrent(nn.LSTM),
    "GRU": recurrent(nn.GRU),
    "MaxPool1d": pool(nn.MaxPool1d, 1),
    "MaxPool2d": pool(nn.MaxPool2d, 2),
    "AvgPool1d": pool(nn.AvgPool1d, 1),
    "AvgPool2d": pool(nn.AvgPool2d, 2),
    "AdaptiveAvgPool1d": adaptive_pool(1, uneven=False),
    "AdaptiveAvgPool2d": adaptive_pool(2, uneven=False),
    "AdaptiveAvgPool1d_uneven": adaptive_pool(1, uneven=True),
    "AdaptiveAvgPool2d_uneven": adaptive_pool(2, uneven=True),
    "ReLU": activation(nn.ReLU),
    "GELU": activation(nn.GELU),
    "GELU_tanh": activation(nn.GELU, approximate=st.just("tanh")),
    "SiLU": activation(nn.SiLU),
    "Tanh": activation(nn.Tanh),
    "Sigmoid": activation(nn.Sigmoid),
    "Softplus": activation(nn.Softplus, beta=st.sampled_from([0.5, 1.0, 2.0]),
                           threshold=st.sampled_from([1.0, 20.0])),
    "LeakyReLU": activation(nn.LeakyReLU, negative_slope=st.sampled_from([0.01, 0.2, 1.5])),
    "ELU": activation(nn.ELU, alpha=st.sampled_from([0.5, 1.0, 2.0])),
    "Hardswish": activation(nn.Hardswish),
    "Mish": activation(nn.Mish),
    "Softmax": activation(nn.Softmax, dim=DIMS),
    "LogSoftmax": activation(nn.LogSoftmax, dim=DIMS),
    "CrossEntropyLoss": class_loss(nn.CrossEntropyLoss),
    "CrossEntropyLoss_ignore_index": class_loss(nn.CrossEntropyLoss, ignore_index=True),
    "CrossEntropyLoss_all_ignored": class_loss(nn.CrossEntropyLoss, all_ignored=True),
    "CrossEntropyLoss_label_smoothing": class_loss(nn.CrossEntropyLoss, label_smoothing=True),
    "CrossEntropyLoss_probabilities": class_loss(nn.CrossEntropyLoss, probabilities=True),
    "NLLLoss": class_loss(nn.NLLLoss, ignore_index=True),
    "MSELoss": pointwise_loss(nn.MSELoss),
    "L1Loss": pointwise_loss(nn.L1Loss),
    "SmoothL1Loss": pointwise_loss(nn.SmoothL1Loss, beta=st.sampled_from([0.5, 1.0, 2.0])),
    "BCEWithLogitsLoss": bce_with_logits(),
    "KLDivLoss": kl_div(),
}
NAMES = list(LAYERS)


# ---- the check ---------------------------------------------------------------------------------


def _tensors(value: Any) -> list[torch.Tensor]:
    """The float tensors of an output (tensor or nested tuple), in order."""
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() else []
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    return []


def _randomize_running_stats(module: nn.Module, generator: torch.Generator) -> None:
    """Eval mode normalizes with the running statistics: make them something other than 0 and 1."""
    with torch.no_grad():
        for name, buffer in module.named_buffers():
            if name.endswith("running_mean"):
                buffer.copy_(torch.randn(buffer.shape, generator=generator))
            elif name.endswith("running_var"):
                buffer.copy_(0.5 + torch.rand(buffer.shape, generator=generator))


def check_layer(impl, options, layer: str, drawn: Example, seed: int) -> None:
    """Forward, then backward of sum(output * seeded weights) over every float output; the oracle
    judges outputs, parameter and input gradients and the buffers after the step."""
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        eager = drawn.module()
    if drawn.eval:
        _randomize_running_stats(eager, generator)
        eager.eval()
    eager = eager.to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options), seed)
    inputs = input_runs(tuple(spec.make(generator) for spec in drawn.inputs), seed=seed, device=options.device)
    outputs = {run: modules[run](*inputs[run]) for run in RUNS}
    weights = input_runs(tuple(torch.randn(out.shape, generator=generator) for out in _tensors(outputs["eager"])),
                         seed=seed + 1, device=options.device)
    results = {}
    for run in RUNS:
        loss = sum((out * weight.to(out.dtype)).sum() for out, weight in zip(_tensors(outputs[run]), weights[run]))
        loss.backward()
        results[run] = {"output": outputs[run],
                        "param_grads": {name: p.grad for name, p in modules[run].named_parameters()},
                        "input_grads": [x.grad for x in inputs[run] if x.is_floating_point()],
                        "buffers": dict(modules[run].named_buffers())}
    assert_matches_oracle(results, path=layer)


@pytest.mark.parametrize("layer", NAMES)
def test_layer_matches_eager(impl, options, layer):
    @costly(0.2)
    @given(drawn=LAYERS[layer], seed=SEEDS)
    def drawn_layer(drawn, seed):
        check_layer(impl, options, layer, drawn, seed)

    drawn_layer()
