"""Graphs rewritten into forms onnxruntime's kernels compute right, applied to every graph a session
runs (:func:`for_device`), each rewrite one module with one job.

- Everywhere: ``Sigmoid`` built from ``Exp`` (:mod:`.exact_sigmoid`): the CPU kernel is accurate
  only in absolute terms, so a saturated sigmoid's gradient came out relatively wrong; float64
  ``LayerNormalization`` as the ops it is defined by (:mod:`.double_normalizers`): both kernels keep
  float64 statistics at float32 accuracy.
- On the CPU: float16 and bfloat16 (autocast's, or a model in half precision) computed in float32
  between explicit casts (:mod:`.half_in_float32`), rounded after every op as torch's CPU kernels
  do: onnxruntime's CPU provider has almost no bfloat16 kernels, and runs float16 ops it lacks in
  float32 without the rounding (or the overflow) between them.
- On CUDA: the first runs on an H200 (onnxruntime-gpu 1.31.1) found kernels refusing inputs ONNX
  defines and the CPU kernels compute: reductions dropping an empty axis, ``Gelu`` of a 0-d tensor,
  the variadic ``Sum`` of empty tensors. These only move shapes around or split a node into the ops
  it is defined by, so CPU and CUDA sessions compute the same values. And float64: the CUDA
  ScatterND has no float64 reduction (:mod:`.deterministic_scatter`'s product instead), and its
  Softmax, LogSoftmax and SoftmaxCrossEntropyLoss are float32-accurate in float64
  (:mod:`.double_normalizers`: the ops they are defined by). A Dropout the memory optimizer
  recomputes from its mask computes in the CUDA kernel's order (:mod:`.cuda_dropout`). bfloat16 is
  computed in float32 between casts as on the CPU (:func:`.half_in_float32.bfloat16_in_float32`): the
  provider lacks bfloat16 comparisons and reductions, and ONNX's ``Einsum`` and
  ``NegativeLogLikelihoodLoss`` admit none.

- On CUDA under torch's deterministic mode (:func:`deterministic`): the embedding gradient's
  ``ScatterND(add)``, which the CUDA kernel sums with atomics, as a one-hot product
  (:mod:`.deterministic_scatter`).

Every graph of every recompute level passes here, so the levels stay bitwise equal.
"""
from __future__ import annotations

import onnx

from reference.runtime.kernel_forms.half_in_float32 import bfloat16_in_float32, half_in_float32
from reference.runtime.kernel_forms.cuda_dropout import recomputed_dropout_as_cuda
from reference.runtime.kernel_forms.deterministic_scatter import double_scatter_add_as_products, scatter_add_as_products
from reference.runtime.kernel_forms.double_normalizers import double_layer_norm_decomposed, double_softmax_decomposed
from reference.runtime.kernel_forms.exact_sigmoid import exact_sigmoid
from reference.runtime.kernel_forms.gelu_rank import gelu_with_an_axis
from reference.runtime.kernel_forms.kept_axes import keep_reduced_axes
from reference.runtime.kernel_forms.sum_chain import sum_as_adds

EVERYWHERE = (exact_sigmoid, double_layer_norm_decomposed)
CPU_ONLY = (half_in_float32,)
CUDA_ONLY = (keep_reduced_axes, gelu_with_an_axis, sum_as_adds, double_scatter_add_as_products,
             double_softmax_decomposed, recomputed_dropout_as_cuda, bfloat16_in_float32)
CUDA_DETERMINISTIC = (scatter_add_as_products,)


def for_cuda(model: onnx.ModelProto) -> onnx.ModelProto:
    """The CUDA rewrites (tests compare the shape-moving ones bitwise with the graph given, the
    float64 ones with float64 eager)."""
    for rewrite in CUDA_ONLY:
        model = rewrite(model)
    return model


def for_device(model: onnx.ModelProto, device: str) -> onnx.ModelProto:
    for rewrite in EVERYWHERE:
        model = rewrite(model)
    if device == "cuda":
        return for_cuda(model)
    for rewrite in CPU_ONLY:
        model = rewrite(model)
    return model


def deterministic(model: onnx.ModelProto) -> onnx.ModelProto:
    """The forms of a CUDA graph under torch's deterministic mode (after :func:`for_device`)."""
    for rewrite in CUDA_DETERMINISTIC:
        model = rewrite(model)
    return model
