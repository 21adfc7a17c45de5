"""Symbolics for the torch.nn layers torch's TorchScript exporter refuses or gets wrong beyond those of
:mod:`reference.export.layer_symbolics`, found by checking every layer torch.nn has
(``ortcheck/strategies/nn_layers/coverage.py``). Each follows ATen's formula and order:

- ``nn.Threshold``: ``x > threshold ? x : value`` (torch's refuses a threshold other than 0);
- ``nn.LogSigmoid``: ``-softplus(-x)`` (torch's takes the log of a sigmoid rounded to 1);
- ``nn.ChannelShuffle``: ``[N, g, C/g, ...]`` transposed to ``[N, C/g, g, ...]``;
- ``nn.CosineSimilarity``: ``Σ (x1 / max(‖x1‖, eps)) (x2 / max(‖x2‖, eps))``, the clamp applied
  without a gradient of its own as ATen's (under ``no_grad``), the operands broadcast first (a 0-d
  pair reaches it as 1-d: :mod:`reference.export.scalar_dims`); torch's divides once, takes each
  norm before broadcasting (a broadcast operand's norm missed its copies) and makes a 0-d result 1-d;
- ``nn.BCEWithLogitsLoss``: ``(1 - t) x - log_sigmoid(x) ((pos_weight - 1) t + 1)``, as ATen's
  (torch's takes ``log(1 - sigmoid(x))``: infinite once sigmoid rounds to 1, from x = 17 in float32,
  and its gradient for the target loses digits well before);
- ``nn.PairwiseDistance``: ``‖x1 - x2 + eps‖_p`` (torch's raises ``x1 - x2`` to p without its
  absolute value and takes the 1/(p + eps)-th root);
- the losses ``BCELoss`` (logs clamped at -100), ``SoftMarginLoss``, ``HingeEmbeddingLoss``,
  ``PoissonNLLLoss`` (Stirling's term where the target exceeds 1), ``MultiMarginLoss``,
  ``MultiLabelMarginLoss`` (targets read up to their first -1), torch's refusing them all;
- ``nn.AlphaDropout`` / ``nn.FeatureAlphaDropout`` at p = 0 or in eval mode: the identity (torch's
  refuses training mode; a drawn alpha-dropout mask is refused by name).
"""
from __future__ import annotations

import math

import torch
from torch.onnx import symbolic_helper

from reference.export.detach import detach
from reference.export.layer_symbolics import _cast_like, _ints, _reduce, _scalar


def _rank(x) -> int:
    return symbolic_helper._get_tensor_rank(x)


@symbolic_helper.parse_args("v", "f", "f")
def threshold(g, x, threshold_value, value):
    return g.op("Where", g.op("Greater", x, _scalar(g, threshold_value, x)), x, _scalar(g, value, x))


def log_sigmoid(g, x):
    """``-softplus(-x)``: torch's ``Log(Sigmoid(x))`` rounds sigmoid to 1 for large x (-1.19e-7 at
    x = 16, where eager gives -1.13e-7), and onnxruntime's Softplus is accurate there. It has no
    float64 kernel: there, ATen's ``min(x, 0) - log1p(exp(-|x|))``, with log1p(e) as
    ``log(u) e / (u - 1)`` for ``u = 1 + e`` (Goldberg's: accurate where ``1 + e`` rounds), e where u is 1."""
    if x.type().scalarType() != "Double":
        return g.op("Neg", g.op("Softplus", g.op("Neg", x)))
    one, zero = _scalar(g, 1.0, x), _scalar(g, 0.0, x)
    e = g.op("Exp", g.op("Neg", g.op("Abs", x)))
    u = g.op("Add", one, e)
    rounded = g.op("Sub", u, one)
    exact = g.op("Equal", rounded, zero)
    log1p = g.op("Where", exact, e, g.op("Mul", g.op("Log", u), g.op("Div", e, g.op("Where", exact, one, rounded))))
    return g.op("Sub", g.op("Min", x, zero), log1p)


@symbolic_helper.parse_args("v", "i")
def channel_shuffle(g, x, groups):
    shape = g.op("Shape", x)
    per_group = g.op("Div", g.op("Slice", shape, _ints(g, 1), _ints(g, 2)), _ints(g, groups))
    grouped = g.op("Concat", g.op("Slice", shape, _ints(g, 0), _ints(g, 1)), _ints(g, groups), per_group, _ints(g, -1),
                   axis_i=0)
    swapped = g.op("Transpose", g.op("Reshape", x, grouped), perm_i=[0, 2, 1, 3])
    return g.op("Reshape", swapped, shape)


@symbolic_helper.parse_args("v", "v", "i", "f")
def cosine_similarity(g, x1, x2, dim, eps):
    x1, x2 = g.op("Expand", x1, g.op("Shape", x2)), g.op("Expand", x2, g.op("Shape", x1))  # broadcast first

    def normalized(x):
        norm = g.op("ReduceL2", x, _ints(g, dim), keepdims_i=1)
        clamped = g.op("Add", norm, detach(g, g.op("Sub", g.op("Max", norm, _scalar(g, eps, x)), norm)))
        return g.op("Div", x, clamped)

    return g.op("ReduceSum", g.op("Mul", normalized(x1), normalized(x2)), _ints(g, dim), keepdims_i=0)


@symbolic_helper.parse_args("v", "v", "f", "f", "b")
def pairwise_distance(g, x1, x2, p, eps, keepdim):
    if not math.isfinite(p) or p <= 0:
        return symbolic_helper._onnx_unsupported(f"pairwise_distance with p={p} (finite p > 0 is)", x1)
    difference = g.op("Add", g.op("Sub", x1, x2), _scalar(g, eps, x1))
    if p == 2:
        return g.op("ReduceL2", difference, _ints(g, -1), keepdims_i=int(keepdim))
    powered = g.op("Abs", difference) if p == 1 else g.op("Pow", g.op("Abs", difference), _scalar(g, p, x1))
    summed = g.op("ReduceSum", powered, _ints(g, -1), keepdims_i=int(keepdim))
    return summed if p == 1 else g.op("Pow", summed, _scalar(g, 1 / p, x1))


@symbolic_helper.parse_args("v", "v", "v", "v", "i")
def binary_cross_entropy_with_logits(g, x, target, weight, pos_weight, reduction):
    log_sigmoid_x = log_sigmoid(g, x)
    if not symbolic_helper._is_none(pos_weight):
        one = _scalar(g, 1.0, x)
        log_sigmoid_x = g.op("Mul", log_sigmoid_x, g.op("Add", g.op("Mul", g.op("Sub", pos_weight, one), target), one))
    loss = g.op("Sub", g.op("Mul", g.op("Sub", _scalar(g, 1.0, x), target), x), log_sigmoid_x)
    if not symbolic_helper._is_none(weight):
        loss = g.op("Mul", loss, weight)
    return _reduce(g, loss, reduction)


@symbolic_helper.parse_args("v", "v", "v", "i")
def binary_cross_entropy(g, x, target, weight, reduction):
    floor = _scalar(g, -100.0, x)
    log_x = g.op("Max", g.op("Log", x), floor)
    log_rest = g.op("Max", g.op("Log", g.op("Sub", _scalar(g, 1.0, x), x)), floor)
    loss = g.op("Sub", g.op("Mul", g.op("Sub", target, _scalar(g, 1.0, target)), log_rest), g.op("Mul", target, log_x))
    if not symbolic_helper._is_none(weight):
        loss = g.op("Mul", loss, weight)
    return _reduce(g, loss, reduction)


@symbolic_helper.parse_args("v", "v", "i")
def soft_margin_loss(g, x, target, reduction):
    return _reduce(g, g.op("Softplus", g.op("Neg", g.op("Mul", x, target))), reduction)


@symbolic_helper.parse_args("v", "v", "f", "i")
def hinge_embedding_loss(g, x, target, margin, reduction):
    zero = _scalar(g, 0.0, x)
    below_margin = g.op("Relu", g.op("Sub", _scalar(g, margin, x), x))
    margin_part = g.op("Where", g.op("Equal", target, _scalar(g, 1.0, target)), zero, below_margin)
    self_part = g.op("Where", g.op("Equal", target, _scalar(g, -1.0, target)), zero, x)
    return _reduce(g, g.op("Add", margin_part, self_part), reduction)


@symbolic_helper.parse_args("v", "v", "b", "b", "f", "i")
def poisson_nll_loss(g, x, target, log_input, full, eps, reduction):
    if log_input:
        loss = g.op("Sub", g.op("Exp", x), g.op("Mul", target, x))
    else:
        loss = g.op("Sub", x, g.op("Mul", target, g.op("Log", g.op("Add", x, _scalar(g, eps, x)))))
    if full:
        stirling = g.op("Add", g.op("Sub", g.op("Mul", target, g.op("Log", target)), target),
                        g.op("Mul", _scalar(g, 0.5, target), g.op("Log", g.op("Mul", _scalar(g, 2 * math.pi, target), target))))
        loss = g.op("Add", loss, g.op("Where", g.op("LessOrEqual", target, _scalar(g, 1.0, target)), _scalar(g, 0.0, target), stirling))
    return _reduce(g, loss, reduction)


@symbolic_helper.parse_args("v", "v", "i", "f", "v", "i")
def multi_margin_loss(g, x, target, p, margin, weight, reduction):
    """Per sample: ``Σ_{j ≠ y} max(0, margin - x[y] + x[j])^p · w[y] / C``."""
    unbatched = _rank(x) == 1
    if unbatched:
        x, target = g.op("Unsqueeze", x, _ints(g, 0)), g.op("Unsqueeze", target, _ints(g, 0))
    if p not in (1, 2):
        return symbolic_helper._onnx_unsupported(f"multi_margin_loss with p={p} (1 and 2 are)", x)
    classes, count = _classes(g, x)
    target = g.op("Unsqueeze", target, _ints(g, 1))
    x_target = g.op("GatherElements", x, target, axis_i=1)
    hinge = g.op("Relu", g.op("Add", g.op("Sub", _scalar(g, margin, x), x_target), x))
    terms = hinge if p == 1 else g.op("Mul", hinge, hinge)
    is_target = g.op("Equal", target, classes)
    terms = g.op("Where", is_target, _scalar(g, 0.0, x), terms)
    if not symbolic_helper._is_none(weight):
        terms = g.op("Mul", terms, g.op("Gather", weight, target, axis_i=0))
    loss = g.op("Div", g.op("ReduceSum", terms, _ints(g, 1), keepdims_i=0), count)
    if unbatched:
        loss = g.op("Squeeze", loss, _ints(g, 0))
    return _reduce(g, loss, reduction)


@symbolic_helper.parse_args("v", "v", "i")
def multilabel_margin_loss(g, x, target, reduction):
    """Per sample: targets are its labels up to the first -1; ``Σ_{j target} Σ_{i not} max(0, 1 - (x[j] - x[i])) / C``."""
    if _rank(x) != 2:
        return symbolic_helper._onnx_unsupported("multilabel_margin_loss of an unbatched input", x)
    classes, count = _classes(g, x)
    int64, boolean = 7, 9  # ONNX element types
    ended = g.op("CumSum", g.op("Cast", g.op("Equal", target, _ints(g, -1)), to_i=int64), g.op("Constant", value_t=torch.tensor(1)))
    listed = g.op("Equal", ended, g.op("Constant", value_t=torch.tensor(0, dtype=torch.int64)))      # [N, K]
    hits = g.op("And", g.op("Equal", g.op("Unsqueeze", target, _ints(g, 2)), classes),
                g.op("Unsqueeze", listed, _ints(g, 2)))                                              # [N, K, C]
    is_target = g.op("Cast", g.op("ReduceMax", g.op("Cast", hits, to_i=int64), _ints(g, 1), keepdims_i=0), to_i=boolean)
    margins = g.op("Relu", g.op("Sub", _scalar(g, 1.0, x),
                                g.op("Sub", g.op("Unsqueeze", x, _ints(g, 2)), g.op("Unsqueeze", x, _ints(g, 1)))))  # [N, j, i]
    pairs = g.op("And", g.op("Unsqueeze", is_target, _ints(g, 2)), g.op("Not", g.op("Unsqueeze", is_target, _ints(g, 1))))
    terms = g.op("Where", pairs, margins, _scalar(g, 0.0, x))
    loss = g.op("Div", g.op("ReduceSum", terms, _ints(g, 1, 2), keepdims_i=0), count)
    return _reduce(g, loss, reduction)


def _classes(g, x):
    """The class ids ``[C]`` (int64) of scores ``[N, C]`` and their count in ``x``'s dtype, read at run time."""
    count = g.op("Squeeze", g.op("Slice", g.op("Shape", x), _ints(g, 1), _ints(g, 2)), _ints(g, 0))
    ids = g.op("Range", g.op("Constant", value_t=torch.tensor(0)), count, g.op("Constant", value_t=torch.tensor(1)))
    return ids, _cast_like(g, count, x)


@symbolic_helper.parse_args("v", "f", "b")
def alpha_dropout(g, x, p, train):
    if train and p > 0:
        return symbolic_helper._onnx_unsupported(f"alpha dropout in training mode with p={p} (p = 0 is the identity)", x)
    return x


MORE_LAYER_SYMBOLICS = {
    "aten::threshold": (threshold, 13), "aten::log_sigmoid": (log_sigmoid, 13), "aten::channel_shuffle": (channel_shuffle, 13),
    "aten::cosine_similarity": (cosine_similarity, 18), "aten::pairwise_distance": (pairwise_distance, 18),
    "aten::binary_cross_entropy": (binary_cross_entropy, 13),
    "aten::binary_cross_entropy_with_logits": (binary_cross_entropy_with_logits, 13), "aten::soft_margin_loss": (soft_margin_loss, 13),
    "aten::hinge_embedding_loss": (hinge_embedding_loss, 13), "aten::poisson_nll_loss": (poisson_nll_loss, 13),
    "aten::multi_margin_loss": (multi_margin_loss, 13), "aten::multilabel_margin_loss": (multilabel_margin_loss, 18),
    "aten::alpha_dropout": (alpha_dropout, 13), "aten::feature_alpha_dropout": (alpha_dropout, 13),
}
