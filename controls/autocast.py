"""Controls of mixed precision: pipelines that get ``torch.autocast`` wrong in the two ways a traced
graph can, each caught by the property about it."""
from __future__ import annotations

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode

from controls.base import DuringForward
from ortcheck.checks.autocast import DTYPES as AUTOCAST_DTYPES


class IgnoresAutocast(DuringForward):
    """Exports with autocast off whatever the caller's region: float32 products and float32 outputs
    where eager's are float16 or bfloat16 (more accurate, and still wrong: not what the user ran);
    its float32 backward never overflows where eager's float16 one does, so GradScaler steps where
    eager's skips."""
    caught_by = (*(f"suites/test_grad_parity.py::test_outputs_loss_and_gradients_match_eager_under_autocast"
                   f"[ignores_autocast-{dtype}]" for dtype in ("float16", "bfloat16")),
                 "suites/test_grad_parity.py::test_grad_scaler_steps_match_eager[ignores_autocast]")

    def seam(self):
        from reference.export.exporter import AUTOCAST_TRACED

        return AUTOCAST_TRACED.overridden(False)


class KeepsGraphAcrossAutocast(DuringForward):
    """Keys its graphs without the autocast state: the graph traced in the first call's region runs
    every later call, in or out of autocast (ORTModule 1.19.2's key has no autocast state either)."""
    caught_by = ("suites/test_transitions.py::test_transitions[keeps_graph_across_autocast-autocast]",)

    def seam(self):
        from reference.transitions.state_machine import AUTOCAST_KEYED

        return AUTOCAST_KEYED.overridden(False)


class _HalfStaysHalf(TorchFunctionMode):
    """Calls whose floating operands are all float16 or bfloat16 run with autocast off: what autocast
    would compute in float32 (losses, and on the CPU reflect and replicate padding) stays in half."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        floats = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and t.is_floating_point()]
        if floats and all(t.dtype in AUTOCAST_DTYPES for t in floats):
            with torch.autocast("cpu", enabled=False), torch.autocast("cuda", enabled=False):
                return func(*args, **kwargs)
        return func(*args, **kwargs)


class ComputesPromotedOpsInHalf(DuringForward):
    """Traces the ops autocast promotes to float32 in their operands' half precision: a half output
    where eager's is float32 (and the precision lost that autocast's promotion exists to keep)."""
    caught_by = tuple(f"suites/test_op_grads.py::test_op_under_autocast_matches_eager[computes_promoted_ops_in_half-{op}-{dtype}]"
                      for op in ("cross_entropy", "pad_reflect") for dtype in ("float16", "bfloat16"))

    def seam(self):
        return _HalfStaysHalf()
