"""Losses, each wrapped (``LossOf``) so the loss is the module's output."""
from __future__ import annotations

import torch
from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, Input, example, floats, make
from .wrappers import Call, LossOf

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
        kwargs["weight"] = draw(_weights(classes, (0.25, 0.5, 1.0, 2.0)))
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
def binary_loss(draw, logits: bool):
    """Logits (``BCEWithLogitsLoss``, optional ``pos_weight``) or probabilities in [0.01, 0.99]
    (``BCELoss``, optional per-element weights) against soft targets."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=3))
    kwargs = dict(reduction=draw(REDUCTIONS))
    if draw(st.booleans()):
        kwargs["pos_weight" if logits else "weight"] = draw(_weights(shape[-1], (0.5, 1.0, 3.0) if logits else (0.5, 1.0, 2.0)))
    cls = nn.BCEWithLogitsLoss if logits else nn.BCELoss
    return example(make(LossOf, make(cls, **kwargs)), floats(*shape, kind="float" if logits else "unit"),
                   floats(*shape, kind="unit"))


def _weights(n: int, values=(0.5, 1.0, 2.0)) -> st.SearchStrategy:
    """``n`` per-class (or per-element) weights as a tensor."""
    return st.lists(st.sampled_from(values), min_size=n, max_size=n).map(torch.tensor)


@st.composite
def kl_div(draw):
    """Log-probabilities against probabilities, or against log-probabilities (``log_target``)."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=3))
    log_target = draw(st.booleans())
    layer = make(nn.KLDivLoss, reduction=draw(st.sampled_from(["batchmean", "mean", "sum", "none"])),
                 log_target=log_target)
    return example(make(LossOf, layer), floats(*shape), floats(*shape, kind="float" if log_target else "positive"))


@st.composite
def pair_loss(draw, cls: type, vectors: bool, **kwargs):
    """Two predictions and a ±1 label per sample: cosine embedding (vectors ``[N, D]``, D ≥ 2: with
    one feature the cosine is ±1 exactly and ``1 - cos`` cancels to a rounding of 1, where eager's
    float32 result is 0 or an ulp by luck, torch's float32 sqrt not being correctly rounded) or
    margin ranking (scores ``[N]``)."""
    batch = draw(BATCH)
    shape = (batch, draw(st.integers(2, 4))) if vectors else (batch,)
    drawn = {name: draw(strategy) for name, strategy in kwargs.items()}
    layer = make(Call, make(cls, reduction=draw(REDUCTIONS), **drawn), 3)
    return example(layer, floats(*shape), floats(*shape), Input((batch,), "sign"))


@st.composite
def triplet_margin(draw):
    """Vectors of at least two features: with one, each distance is |a - b| and the anchor's
    gradient (a-p)/|a-p| - (a-n)/|a-n| cancels to exactly 0 whenever both signs agree, where any
    rounding of the unit terms (1 ulp) fails a zero bound."""
    batch, dim = draw(BATCH), draw(st.integers(2, 4))
    layer = make(nn.TripletMarginLoss, margin=draw(st.sampled_from([0.5, 1.0, 4.0])), p=draw(st.sampled_from([1.0, 2.0])),
                 swap=draw(st.booleans()), reduction=draw(REDUCTIONS))
    return example(make(Call, layer, 3), floats(batch, dim), floats(batch, dim), floats(batch, dim))


@st.composite
def sign_target_loss(draw, cls: type, **kwargs):
    """Scores against ±1 labels (hinge embedding, soft margin)."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=3))
    drawn = {name: draw(strategy) for name, strategy in kwargs.items()}
    return example(make(LossOf, make(cls, reduction=draw(REDUCTIONS), **drawn)), floats(*shape), Input(tuple(shape), "sign"))


@st.composite
def gaussian_nll(draw):
    """Mean, target and a positive variance, per element or one per sample (last side 1)."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=3))
    variance = shape[:-1] + [1] if draw(st.booleans()) else shape
    layer = make(nn.GaussianNLLLoss, full=draw(st.booleans()), eps=draw(st.sampled_from([1e-6, 1e-2])),
                 reduction=draw(REDUCTIONS))
    return example(make(Call, layer, 3), floats(*shape), floats(*shape), floats(*variance, kind="positive"))


@st.composite
def poisson_nll(draw):
    """Log-rates (``log_input``) or positive rates against positive counts, with Stirling's term or not."""
    shape = draw(st.lists(SIDE, min_size=1, max_size=3))
    log_input = draw(st.booleans())
    layer = make(nn.PoissonNLLLoss, log_input=log_input, full=draw(st.booleans()), reduction=draw(REDUCTIONS))
    return example(make(LossOf, layer), floats(*shape, kind="float" if log_input else "positive"),
                   floats(*shape, kind="positive"))


@st.composite
def multilabel_soft_margin(draw):
    batch, classes = draw(BATCH), draw(st.integers(1, 4))
    kwargs = dict(reduction=draw(REDUCTIONS))
    if draw(st.booleans()):
        kwargs["weight"] = draw(_weights(classes))
    return example(make(LossOf, make(nn.MultiLabelSoftMarginLoss, **kwargs)), floats(batch, classes),
                   floats(batch, classes, kind="unit"))


@st.composite
def multi_margin(draw):
    """Scores ``[N, C]`` or ``[C]`` against a class, p 1 or 2, optional class weights."""
    classes = draw(st.integers(2, 4))
    batch = draw(st.lists(BATCH, max_size=1))
    kwargs = dict(p=draw(st.sampled_from([1, 2])), margin=draw(st.sampled_from([0.5, 1.0])), reduction=draw(REDUCTIONS))
    if draw(st.booleans()):
        kwargs["weight"] = draw(_weights(classes))
    return example(make(LossOf, make(nn.MultiMarginLoss, **kwargs)), floats(*batch, classes),
                   Input(tuple(batch), f"index:{classes}"))


@st.composite
def multilabel_margin(draw):
    """Scores ``[N, C]`` against each sample's labels, listed first and ended by -1."""
    batch, classes = draw(BATCH), draw(st.integers(2, 4))
    return example(make(LossOf, make(nn.MultiLabelMarginLoss, reduction=draw(REDUCTIONS))), floats(batch, classes),
                   Input((batch, classes), f"multilabel:{classes}"))


@st.composite
def triplet_margin_with_distance(draw):
    """The triplet loss with its default distance (pairwise L2), swap or not."""
    batch, dim = draw(BATCH), draw(st.integers(2, 4))
    layer = make(nn.TripletMarginWithDistanceLoss, margin=draw(st.sampled_from([0.5, 1.0])), swap=draw(st.booleans()),
                 reduction=draw(REDUCTIONS))
    return example(make(Call, layer, 3), floats(batch, dim), floats(batch, dim), floats(batch, dim))


@st.composite
def ctc(draw):
    """Log-probabilities ``[T, N, C]`` against targets of length at most T/2 (blank 0 never a target)."""
    length, batch, classes = draw(st.integers(2, 5)), draw(BATCH), draw(st.integers(2, 4))
    target_length = draw(st.integers(1, max(1, length // 2)))
    layer = make(nn.CTCLoss, reduction=draw(REDUCTIONS), zero_infinity=draw(st.booleans()))
    return example(make(Call, layer, 4), floats(length, batch, classes), Input((batch, target_length), f"labels:{classes}"),
                   Input((batch,), f"filled:{length}"), Input((batch,), f"filled:{target_length}"))


@st.composite
def adaptive_log_softmax(draw):
    """The clustered softmax: a head and 1-2 tail clusters, its loss (the mean negative log-likelihood)."""
    features, classes = draw(st.integers(2, 4)), draw(st.integers(4, 7))
    cutoffs = sorted(draw(st.sets(st.integers(1, classes - 1), min_size=1, max_size=2)))
    layer = make(nn.AdaptiveLogSoftmaxWithLoss, features, classes, cutoffs, div_value=draw(st.sampled_from([2.0, 4.0])),
                 head_bias=draw(st.booleans()))
    batch = draw(BATCH)
    return example(make(Call, layer, 2, pick=1), floats(batch, features), Input((batch,), f"index:{classes}"))


@st.composite
def linear_cross_entropy(draw):
    """The fused Linear + cross-entropy loss (torch 2.13), biased or not, with class weights or not."""
    features, classes, batch = draw(st.integers(1, 4)), draw(st.integers(2, 4)), draw(BATCH)
    kwargs = dict(bias=draw(st.booleans()), reduction=draw(REDUCTIONS))
    return example(make(LossOf, make(nn.LinearCrossEntropyLoss, features, classes, **kwargs)), floats(batch, features),
                   Input((batch,), f"index:{classes}"))
