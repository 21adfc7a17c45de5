"""Runs under ``torch.autocast``: every run of a check enters the same autocast state.

The oracle needs nothing else for reduced precision. autocast casts float32 operands of its listed
ops (products, convolutions) to float16 or bfloat16 and promotes others (softmax, losses) to
float32, but leaves float64 alone: the float64 runs stay the truth, while eager's error, measured on
the same computation under the same autocast state, sets the scale in the precision autocast chose;
the dtype of every output and gradient must be eager's (:func:`ortcheck.checks.oracle.judge`).
"""
from __future__ import annotations

import contextlib
from typing import Callable, Sequence

import torch

DTYPES = (torch.float16, torch.bfloat16)
LOWERS, PROMOTES = "lowers", "promotes"


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float16`` -> ``"float16"``: how test ids, op cases and goldens name a dtype."""
    return str(dtype).removeprefix("torch.")


def autocast_region(device: str, dtype: torch.dtype | None):
    """``torch.autocast`` on ``device`` in ``dtype``; no region for None."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device, dtype=dtype)


def autocast_role(call: Callable, inputs: Sequence[torch.Tensor], device: str, dtype: torch.dtype) -> str | None:
    """What eager's autocast does to ``call`` on ``device``, found by running it (its policy differs
    per device and torch version): :data:`LOWERS` (float32 operands computed in ``dtype``, products and
    convolutions), :data:`PROMOTES` (``dtype`` operands computed in float32: losses everywhere, softmax
    and layer_norm on CUDA) or None (the op runs in its operands' dtype)."""
    def floats_out(operand_dtype: torch.dtype) -> set[torch.dtype]:
        cast = [t.detach().to(operand_dtype) if t.is_floating_point() else t for t in inputs]
        with torch.no_grad(), autocast_region(device, dtype):
            outputs = call(*cast)
        outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        return {o.dtype for o in outputs if isinstance(o, torch.Tensor) and o.is_floating_point()}

    if dtype in floats_out(torch.float32):
        return LOWERS
    if torch.float32 in floats_out(dtype):
        return PROMOTES
    return None


def eager_refusal(train_step: Callable[[], object], what: str) -> str | None:
    """Why eager itself cannot run ``train_step`` (a forward and backward of ``what`` in reduced
    precision), or None: torch's kernels lack some half forms (on the CPU, ``mse_loss``'s backward in
    float16 before torch 2.5). The oracle cannot judge what eager cannot run: not applicable, never a finding."""
    try:
        train_step()
    except (RuntimeError, NotImplementedError) as error:
        if "not implemented for" not in str(error):
            raise
        return f"eager (torch {torch.__version__}) cannot train {what}: {str(error).splitlines()[0]}"
    return None
