"""Graphs rewritten into forms onnxruntime's CUDA kernels accept, every number bitwise unchanged.

The first runs on an H200 (onnxruntime-gpu 1.31.1) found CUDA kernels refusing inputs ONNX defines
and the CPU kernels compute: reductions dropping an empty axis, ``Gelu`` of a 0-d tensor, the
variadic ``Sum`` of empty tensors. Each rewrite here is one module with one job, applied in order
to every graph a CUDA session runs (:func:`for_cuda`); each only moves shapes around or splits a
node into the ops it is defined by, so CPU sessions (which need none of them) and CUDA sessions
compute the same values, and recompute levels stay bitwise equal (every level's graphs pass here).
"""
from __future__ import annotations

import onnx

from reference.runtime.cuda_forms.gelu_rank import gelu_with_an_axis
from reference.runtime.cuda_forms.kept_axes import keep_reduced_axes
from reference.runtime.cuda_forms.sum_chain import sum_as_adds

REWRITES = (keep_reduced_axes, gelu_with_an_axis, sum_as_adds)


def for_cuda(model: onnx.ModelProto) -> onnx.ModelProto:
    for rewrite in REWRITES:
        model = rewrite(model)
    return model
