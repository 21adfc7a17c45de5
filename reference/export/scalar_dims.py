"""0-d operands of ops that take a dimension, traced as eager treats them: as 1-d with one element.

ATen lets ``dim`` be 0 or -1 on a 0-d tensor (``softmax``, ``topk``, ``gather``, ``cumsum``, ...),
ONNX ops do not (onnxruntime: "Invalid value for attribute axis", "Cannot apply CumSum operator on a
scalar"; torch's symbolics divide by the rank). While a module is traced, such a call sees its 0-d
tensors unsqueezed to shape ``(1,)``, and each result eager gives 0-d (its shape known from the same
call on meta tensors, which the trace does not record) is squeezed back. Found by OpInfo's samples.
"""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from reference.export.data_guards import untraced

_TAKING_A_DIM = frozenset({"softmax", "log_softmax", "_softmax", "_log_softmax", "topk", "squeeze", "gather",
                           "scatter", "scatter_add", "scatter_reduce", "cumsum", "cumprod", "logcumsumexp",
                           "cummax", "cummin", "norm", "linalg_vector_norm", "vector_norm", "kthvalue", "sort",
                           "argsort", "index_select", "index_add", "index_copy", "take_along_dim", "softmin",
                           "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "normalize",
                           "cosine_similarity"})


def _zero_dim(value) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() == 0


class scalars_as_vectors(TorchFunctionMode):  # noqa: N801 - used as a context manager
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", None) not in _TAKING_A_DIM or not args or not _zero_dim(args[0]):
            return func(*args, **kwargs)
        with untraced():
            wanted = func(*tree_map(_on_meta, args), **tree_map(_on_meta, kwargs))
        out = func(*tree_map(_as_vector, args), **tree_map(_as_vector, kwargs))
        outs, spec = tree_flatten(out)
        shapes, _ = tree_flatten(wanted)
        return tree_unflatten([o.reshape(()) if isinstance(o, torch.Tensor) and _zero_dim(w) and o.dim() == 1 else o
                               for o, w in zip(outs, shapes)], spec)


def _on_meta(value):
    return torch.empty(value.shape, dtype=value.dtype, device="meta") if isinstance(value, torch.Tensor) else value


def _as_vector(value):
    return value.reshape(1) if _zero_dim(value) else value
