"""Symbolics for torch.nn layers torch 2.13's TorchScript exporter refuses, in plain ONNX ops the
autodiff stage has rules for. Registered with the others (:mod:`reference.export.symbolics`), only
while the reference exports.

Each follows eager's formula and rounding order: ``nn.Bilinear`` (``x1 W x2 + b`` as two MatMuls),
``nn.RMSNorm`` (``x / sqrt(mean(x²) + eps) · weight``, eps defaulting to the dtype's), ``nn.L1Loss``,
``nn.SmoothL1Loss``, ``nn.HuberLoss``, cross-entropy with ``label_smoothing``
(``(1 - ε)·nll + ε/C · smooth``, the smooth term normalised as ATen's
``cross_entropy_loss_label_smoothing`` does, constants rounded once from double as eager's are),
the margin-ranking, cosine-embedding and triplet-margin losses (ATen's formulas), channel
dropout (``nn.Dropout1d/2d``, which torch exports in training mode not at all),
grouped-query ``scaled_dot_product_attention(enable_gqa=True)`` (key/value heads repeated), and
adaptive average pooling to any size (torch's needs the input's sizes at export).
"""
from __future__ import annotations

import torch
from torch.onnx import symbolic_helper

from reference.export.autocast_probe import as_computed
from reference.export.embeddings import embedding, embedding_bag

try:
    from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_opset12, symbolic_opset14
except ImportError:  # torch < 2.9
    from torch.onnx import _type_utils, symbolic_opset12, symbolic_opset14

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _ints(g, *values: int):
    return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))


def _dtype(x) -> torch.dtype:
    return _type_utils.JitScalarType.from_value(x, _type_utils.JitScalarType.FLOAT).dtype()


def _cast_like(g, value, like):
    """``value`` in ``like``'s dtype (a Cast: CastLike would make ``like`` an operand to differentiate)."""
    return g.op("Cast", value, to_i=_type_utils.JitScalarType.from_dtype(_dtype(like)).onnx_type())


def _scalar(g, value: float, like):
    """``value`` rounded once to ``like``'s dtype, as eager applies a Python float to a tensor."""
    return g.op("Constant", value_t=torch.tensor(value, dtype=_dtype(like)))


def _reduce(g, loss, reduction: int):
    if _REDUCTIONS[reduction] == "none":
        return loss
    return g.op("ReduceMean" if _REDUCTIONS[reduction] == "mean" else "ReduceSum", loss, keepdims_i=0)


@symbolic_helper.parse_args("v", "v", "v", "v")
def bilinear(g, x1, x2, weight, bias):
    """``y[..., o] = Σ_j (Σ_i x1[..., i] W[o, i, j]) x2[..., j] + b[o]``, contracting ``i`` first as
    eager's ``_trilinear`` does, over the batch flattened to ``N``: ``[N, I] @ [I, O·J]``, then
    ``[N, O, J] @ [N, J, 1]``. Every product has equal batch dimensions or a 2-D operand:
    onnxruntime's CUDA MatMul got ``[..., 1, 1, I] @ [O, I, J]`` (both operands broadcast) wrong."""
    out_features, in1, in2 = (symbolic_helper._get_tensor_dim_size(weight, axis) for axis in range(3))
    shape = g.op("Shape", x1)
    lead = g.op("Slice", shape, _ints(g, 0), _ints(g, -1))
    left = g.op("Reshape", x1, _ints(g, -1, in1))
    flat_weight = g.op("Reshape", g.op("Transpose", weight, perm_i=[1, 0, 2]), _ints(g, in1, out_features * in2))
    partial = g.op("Reshape", g.op("MatMul", left, flat_weight), _ints(g, -1, out_features, in2))
    right = g.op("Reshape", x2, _ints(g, -1, in2, 1))
    y = g.op("Reshape", g.op("MatMul", partial, right), g.op("Concat", lead, _ints(g, out_features), axis_i=0))
    return y if symbolic_helper._is_none(bias) else g.op("Add", y, bias)


def rms_norm(g, x, normalized_shape, weight, eps):
    shape = symbolic_helper._get_const(normalized_shape, "is", "normalized_shape")
    eps = torch.finfo(_dtype(x)).eps if symbolic_helper._is_none(eps) else symbolic_helper._get_const(eps, "f", "eps")
    mean_square = g.op("ReduceMean", g.op("Mul", x, x), _ints(g, *range(-len(shape), 0)), keepdims_i=1)
    y = g.op("Div", x, g.op("Sqrt", g.op("Add", mean_square, _scalar(g, eps, x))))
    return y if symbolic_helper._is_none(weight) else g.op("Mul", y, weight)


@symbolic_helper.parse_args("v", "v", "i")
def l1_loss(g, x, target, reduction):
    return _reduce(g, g.op("Abs", g.op("Sub", x, target)), reduction)


def _piecewise(g, x, target, reduction, bound: float, inside, outside):
    """Quadratic within ``bound`` of the target, linear beyond (``bound`` 0: linear everywhere)."""
    error = g.op("Abs", g.op("Sub", x, target))
    if bound == 0:
        return _reduce(g, error, reduction)
    loss = g.op("Where", g.op("Less", error, _scalar(g, bound, x)), inside(error), outside(error))
    return _reduce(g, loss, reduction)


@symbolic_helper.parse_args("v", "v", "i", "f")
def smooth_l1_loss(g, x, target, reduction, beta):
    """``0.5 d² / beta`` where ``d < beta``, else ``d - 0.5 beta``."""
    return _piecewise(g, x, target, reduction, beta,
                      lambda d: g.op("Div", g.op("Mul", g.op("Mul", d, d), _scalar(g, 0.5, x)), _scalar(g, beta, x)),
                      lambda d: g.op("Sub", d, _scalar(g, 0.5 * beta, x)))


@symbolic_helper.parse_args("v", "v", "i", "f")
def huber_loss(g, x, target, reduction, delta):
    """``0.5 d²`` where ``d < delta``, else ``delta (d - 0.5 delta)``."""
    return _piecewise(g, x, target, reduction, delta,
                      lambda d: g.op("Mul", g.op("Mul", d, d), _scalar(g, 0.5, x)),
                      lambda d: g.op("Mul", g.op("Sub", d, _scalar(g, 0.5 * delta, x)), _scalar(g, delta, x)))


def cross_entropy_loss(g, x, target, weight, reduction, ignore_index, label_smoothing):
    """torch's own symbolic without label smoothing; with it, ATen's formula (class axis 1). An
    unbatched input (logits ``[C]``, a 0-d target) runs as a batch of one (torch's own symbolic
    emits a Reshape onnxruntime rejects for it). Under autocast, in the dtype eager computes it in
    (CUDA's policy widens the ``log_softmax`` inside it, below the op the trace records)."""
    float_target = target.type().scalarType() in ("Float", "Double", "Half", "BFloat16")
    x = as_computed(g, x, lambda probe: _cross_entropy_probe(probe, float_target))
    if float_target and _dtype(target) != _dtype(x):
        target = _cast_like(g, target, x)
    if symbolic_helper._get_tensor_rank(x) == 1:
        batched = _batched_cross_entropy_loss(g, g.op("Unsqueeze", x, _ints(g, 0)), g.op("Unsqueeze", target, _ints(g, 0)),
                                              weight, reduction, ignore_index, label_smoothing)
        none = _REDUCTIONS[symbolic_helper._maybe_get_const(reduction, "i")] == "none"
        return g.op("Squeeze", batched, _ints(g, 0)) if none else batched
    return _batched_cross_entropy_loss(g, x, target, weight, reduction, ignore_index, label_smoothing)


def _cross_entropy_probe(probe: torch.Tensor, float_target: bool) -> torch.Tensor:
    """Eager's cross entropy of ``probe`` (class axis 1, or 0 unbatched), to read its dtype."""
    target = (probe.clone() if float_target else
              torch.zeros(probe.shape[:1] + probe.shape[2:] if probe.dim() > 1 else (), dtype=torch.long, device=probe.device))
    return torch.nn.functional.cross_entropy(probe, target)


def _batched_cross_entropy_loss(g, x, target, weight, reduction, ignore_index, label_smoothing):
    if target.type().scalarType() in ("Float", "Double", "Half", "BFloat16"):
        return _cross_entropy_with_probabilities(g, x, target, weight, reduction, label_smoothing)
    smoothing = symbolic_helper._maybe_get_const(label_smoothing, "f")
    if not smoothing:
        return symbolic_opset12.cross_entropy_loss(g, x, target, weight, reduction, ignore_index, label_smoothing)
    reduction = _REDUCTIONS[symbolic_helper._maybe_get_const(reduction, "i")]
    ignore = symbolic_helper._maybe_get_const(ignore_index, "i")
    weighted = not symbolic_helper._is_none(weight)
    log_probs = g.op("LogSoftmax", x, axis_i=1)
    nll = g.op("NegativeLogLikelihoodLoss", log_probs, target, *([weight] if weighted else []),
               reduction_s=reduction, ignore_index_i=ignore)
    rank = symbolic_helper._get_tensor_rank(x)
    if weighted:
        log_probs = g.op("Mul", log_probs, g.op("Reshape", weight, _ints(g, 1, -1, *[1] * (rank - 2))))
    smooth = g.op("Neg", g.op("ReduceSum", log_probs, _ints(g, 1), keepdims_i=0))
    ignored = g.op("Equal", target, g.op("Constant", value_t=torch.tensor(ignore, dtype=torch.int64)))
    zero = _scalar(g, 0.0, x)
    smooth = g.op("Where", ignored, zero, smooth)
    if reduction != "none":
        smooth = g.op("ReduceSum", smooth, keepdims_i=0)
    if reduction == "mean":
        if weighted:
            kept = g.op("Where", ignored, g.op("Constant", value_t=torch.tensor(0, dtype=torch.int64)), target)
            count = g.op("ReduceSum", g.op("Where", ignored, zero, g.op("Gather", weight, kept)), keepdims_i=0)
        else:
            count = _cast_like(g, g.op("ReduceSum", g.op("Cast", g.op("Not", ignored), to_i=7), keepdims_i=0), x)
        smooth = g.op("Div", smooth, count)
    classes = g.op("Cast", g.op("Gather", g.op("Shape", x), _ints(g, 1)), to_i=11)  # double, as in eager
    share = _cast_like(g, g.op("Div", g.op("Constant", value_t=torch.tensor([smoothing], dtype=torch.float64)),
                                 classes), x)
    share = g.op("Squeeze", share, _ints(g, 0))
    return g.op("Add", g.op("Mul", nll, _scalar(g, 1 - smoothing, x)), g.op("Mul", smooth, share))


def _cross_entropy_with_probabilities(g, x, target, weight, reduction, label_smoothing):
    """ATen's cross-entropy against class probabilities: ``-Σ log_softmax(x)·target(·weight)`` over
    the class axis, the mean dividing by the number of samples (elements over classes); label
    smoothing mixes the target with the uniform distribution first. The target's gradient too."""
    smoothing = symbolic_helper._maybe_get_const(label_smoothing, "f")
    reduction = _REDUCTIONS[symbolic_helper._maybe_get_const(reduction, "i")]
    rank = symbolic_helper._get_tensor_rank(x)
    classes = g.op("Gather", g.op("Shape", x), _ints(g, 1))
    if smoothing:
        share = _cast_like(g, g.op("Div", g.op("Constant", value_t=torch.tensor([smoothing], dtype=torch.float64)),
                                   g.op("Cast", classes, to_i=11)), x)
        target = g.op("Add", g.op("Mul", target, _scalar(g, 1 - smoothing, x)), g.op("Squeeze", share, _ints(g, 0)))
    product = g.op("Mul", g.op("LogSoftmax", x, axis_i=1), target)
    if not symbolic_helper._is_none(weight):
        product = g.op("Mul", product, g.op("Reshape", weight, _ints(g, 1, -1, *[1] * (rank - 2))))
    if reduction == "none":
        return g.op("Neg", g.op("ReduceSum", product, _ints(g, 1), keepdims_i=0))
    total = g.op("Neg", g.op("ReduceSum", product, keepdims_i=0))
    if reduction == "sum":
        return total
    samples = g.op("Div", g.op("ReduceProd", g.op("Shape", x), keepdims_i=0), g.op("Squeeze", classes, _ints(g, 0)))
    return g.op("Div", total, _cast_like(g, samples, x))


def _sum_last(g, x):
    return g.op("ReduceSum", x, _ints(g, -1), keepdims_i=0)


def _pairwise_distance(g, a, b, p: float, eps: float):
    """``‖a - b + eps‖_p`` over the last axis, as ``torch.pairwise_distance`` (p 1 or 2)."""
    difference = g.op("Add", g.op("Sub", a, b), _scalar(g, eps, a))
    if p == 1:
        return _sum_last(g, g.op("Abs", difference))
    return g.op("Sqrt", _sum_last(g, g.op("Mul", difference, difference)))


@symbolic_helper.parse_args("v", "v", "v", "f", "i")
def margin_ranking_loss(g, x1, x2, target, margin, reduction):
    """``max(0, -y (x1 - x2) + margin)``."""
    loss = g.op("Add", g.op("Mul", g.op("Neg", target), g.op("Sub", x1, x2)), _scalar(g, margin, x1))
    return _reduce(g, g.op("Relu", loss), reduction)


@symbolic_helper.parse_args("v", "v", "v", "f", "i")
def cosine_embedding_loss(g, x1, x2, target, margin, reduction):
    """ATen's: ``1 - cos`` where y = 1, ``max(0, cos - margin)`` where y = -1, with cos from the
    dot product over sqrt((|x1|² + 1e-12)(|x2|² + 1e-12)) along the feature axis."""
    axis = 1 if symbolic_helper._get_tensor_rank(x1) == 2 else 0
    summed = lambda value: g.op("ReduceSum", value, _ints(g, axis), keepdims_i=0)  # noqa: E731
    tiny = _scalar(g, 1e-12, x1)
    squares = g.op("Mul", g.op("Add", summed(g.op("Mul", x1, x1)), tiny), g.op("Add", summed(g.op("Mul", x2, x2)), tiny))
    cos = g.op("Div", summed(g.op("Mul", x1, x2)), g.op("Sqrt", squares))
    zero = _scalar(g, 0.0, x1)
    positive = g.op("Where", g.op("Equal", target, _scalar(g, 1.0, target)), g.op("Sub", _scalar(g, 1.0, x1), cos), zero)
    negative = g.op("Where", g.op("Equal", target, _scalar(g, -1.0, target)),
                    g.op("Relu", g.op("Sub", cos, _scalar(g, margin, x1))), zero)
    return _reduce(g, g.op("Add", positive, negative), reduction)


@symbolic_helper.parse_args("v", "v", "v", "f", "f", "f", "b", "i")
def triplet_margin_loss(g, anchor, positive, negative, margin, p, eps, swap, reduction):
    """``max(0, margin + d(a, p) - d(a, n))``, d(a, n) replaced by d(p, n) where smaller (``swap``)."""
    if p not in (1.0, 2.0):
        return symbolic_helper._onnx_unsupported(f"triplet_margin_loss with p={p} (1 and 2 are)", anchor)
    near, far = _pairwise_distance(g, anchor, positive, p, eps), _pairwise_distance(g, anchor, negative, p, eps)
    if swap:
        swapped = _pairwise_distance(g, positive, negative, p, eps)
        far = g.op("Where", g.op("Less", swapped, far), swapped, far)
    loss = g.op("Relu", g.op("Sub", g.op("Add", near, _scalar(g, margin, anchor)), far))
    return _reduce(g, loss, reduction)


@symbolic_helper.parse_args("v", "f", "b")
def feature_dropout(g, x, p, train):
    """``nn.Dropout1d/2d/3d``: whole channels zeroed with probability p, the rest scaled by 1/(1-p);
    the identity at p = 0 or in eval mode, zeros at p = 1 (ATen's ``x * 0``). Masks come from
    onnxruntime's RNG (as Dropout's do)."""
    if not train or p == 0:
        return x
    if p == 1:
        return g.op("Mul", x, _scalar(g, 0.0, x))
    rank = symbolic_helper._get_tensor_rank(x)
    shape = g.op("Concat", g.op("Slice", g.op("Shape", x), _ints(g, 0), _ints(g, 2)), _ints(g, *[1] * (rank - 2)), axis_i=0)
    draws = g.op("RandomUniformLike", g.op("ConstantOfShape", shape, value_t=torch.tensor([0.0])))
    kept = g.op("Cast", g.op("Not", g.op("Less", draws, g.op("Constant", value_t=torch.tensor(p)))),
                to_i=_type_utils.JitScalarType.from_dtype(_dtype(x)).onnx_type())
    return g.op("Mul", x, g.op("Mul", kept, _scalar(g, 1 / (1 - p), x)))


def _repeat_heads(g, x, repeats):
    """``x.repeat_interleave(repeats, dim=-3)`` with ``repeats`` a 1-element int64 tensor: each head
    ``repeats`` times in a row, as grouped-query attention shares a key/value head."""
    shape = g.op("Shape", x)
    lead, heads = g.op("Slice", shape, _ints(g, 0), _ints(g, -3)), g.op("Slice", shape, _ints(g, -3), _ints(g, -2))
    tail = g.op("Slice", shape, _ints(g, -2), _ints(g, 2**62))
    spread = g.op("Expand", g.op("Unsqueeze", x, _ints(g, -3)), g.op("Concat", lead, heads, repeats, tail, axis_i=0))
    return g.op("Reshape", spread, g.op("Concat", lead, g.op("Mul", heads, repeats), tail, axis_i=0))


@symbolic_helper.parse_args("v", "v", "v", "v", "f", "b", "v", "b")
def scaled_dot_product_attention(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """torch's own symbolic; with ``enable_gqa`` (transformers' default sdpa path for grouped-query
    attention, which torch's refuses) key and value heads first repeated to the query's count."""
    if enable_gqa:
        heads = lambda x: g.op("Slice", g.op("Shape", x), _ints(g, -3), _ints(g, -2))  # noqa: E731
        repeats = g.op("Div", heads(query), heads(key))
        key, value = _repeat_heads(g, key, repeats), _repeat_heads(g, value, repeats)
    if not symbolic_helper._is_none(scale):
        # an explicit float scale meets a bfloat16 query (autocast): cast here, or the exporter's own
        # type promotion casts it to ONNX type 15 (complex128: torch's enum number for bfloat16)
        scale = g.op("Cast", scale, to_i=_type_utils.JitScalarType.from_value(query).onnx_type())
    return symbolic_opset14.scaled_dot_product_attention(g, query, key, value, attn_mask, dropout_p, is_causal, scale,
                                                         False)


def _adaptive_average(g, x, output_size):
    """Adaptive average pooling, one spatial axis at a time: output i of an axis of length L
    averages [floor(i·L/o), ceil((i+1)·L/o)) (the mean of a rectangle is the mean over one axis of the
    means over the other), windows cut with run-time sizes: torch's own symbolic needs static ones."""
    sizes = symbolic_helper._get_const(output_size, "is", "output_size")
    rank = symbolic_helper._get_tensor_rank(x)
    for axis, outputs in zip(range(rank - len(sizes), rank), sizes):
        if outputs is None:
            continue
        if outputs == 1:
            x = g.op("ReduceMean", x, _ints(g, axis), keepdims_i=1)
            continue
        length = g.op("Slice", g.op("Shape", x), _ints(g, axis), _ints(g, axis + 1))
        windows = []
        for i in range(outputs):
            start = g.op("Div", g.op("Mul", length, _ints(g, i)), _ints(g, outputs))
            end = g.op("Div", g.op("Add", g.op("Mul", length, _ints(g, i + 1)), _ints(g, outputs - 1)), _ints(g, outputs))
            window = g.op("Slice", x, start, end, _ints(g, axis))
            windows.append(g.op("ReduceMean", window, _ints(g, axis), keepdims_i=1))
        x = g.op("Concat", *windows, axis_i=axis)
    return x


# each with the lowest opset its ops exist in (ReduceMean with axes as an input: 18)
LAYER_SYMBOLICS = {"aten::bilinear": (bilinear, 13), "aten::rms_norm": (rms_norm, 18),
                   "aten::l1_loss": (l1_loss, 13), "aten::smooth_l1_loss": (smooth_l1_loss, 13),
                   "aten::huber_loss": (huber_loss, 13), "aten::cross_entropy_loss": (cross_entropy_loss, 13),
                   "aten::margin_ranking_loss": (margin_ranking_loss, 13),
                   "aten::cosine_embedding_loss": (cosine_embedding_loss, 13),
                   "aten::triplet_margin_loss": (triplet_margin_loss, 13),
                   "aten::feature_dropout": (feature_dropout, 13),
                   "aten::scaled_dot_product_attention": (scaled_dot_product_attention, 14),
                   **{f"aten::adaptive_avg_pool{n}d": (_adaptive_average, 18) for n in (1, 2, 3)},
                   "aten::embedding": (embedding, 9), "aten::embedding_bag": (embedding_bag, 13)}
