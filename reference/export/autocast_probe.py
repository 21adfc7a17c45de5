"""The dtype eager computes an op in under the export's autocast state, asked of eager itself.

autocast acts at the dispatcher, below the op the trace records when the op is a composite one: a
cast autocast adds inside it (CUDA's policy widens ``log_softmax`` inside ``cross_entropy_loss``,
the CPU's widens reflect padding inside ``pad``) never reaches the graph, and the symbolic then
computes in the half type where eager computed in float32. Each policy differs by device, so the
probe runs on the traced value's device, in the region the export runs in.
"""
from __future__ import annotations

from typing import Callable

import torch

try:  # torch >= 2.9 keeps the TorchScript exporter's helpers here
    from torch.onnx._internal.torchscript_exporter import _type_utils
except ImportError:  # torch 2.4 (ORTModule's environment)
    from torch.onnx import _type_utils


def computed_dtype(x, op: Callable[[torch.Tensor], torch.Tensor]) -> torch.dtype | None:
    """The dtype of ``op`` applied to a small tensor of ``x``'s dtype, rank and device (None where
    the trace does not know them)."""
    rank = x.type().dim() if isinstance(x.type(), torch._C.TensorType) else None
    dtype = _type_utils.JitScalarType.from_value(x, _type_utils.JitScalarType.UNDEFINED)
    if rank is None or dtype == _type_utils.JitScalarType.UNDEFINED:
        return None
    device = x.type().device() or torch.device("cpu")
    return op(torch.zeros((2,) * rank, dtype=dtype.dtype(), device=device)).dtype


def as_computed(g, x, op: Callable[[torch.Tensor], torch.Tensor]):
    """``x`` cast to the dtype eager's ``op`` computes it in (``x`` itself where that is its own)."""
    computed = computed_dtype(x, op)
    if computed is None or computed == _type_utils.JitScalarType.from_value(x).dtype():
        return x
    cast = g.op("Cast", x, to_i=_type_utils.JitScalarType.from_dtype(computed).onnx_type())
    cast.setType(x.type().with_dtype(computed))  # later symbolics read its rank and dtype
    return cast
