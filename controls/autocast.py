"""Controls of mixed precision: pipelines that get ``torch.autocast`` wrong in the two ways a traced
graph can, each caught by the property about it."""
from __future__ import annotations

from controls.base import DuringForward


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
        from reference.transitions.machine import AUTOCAST_KEYED

        return AUTOCAST_KEYED.overridden(False)
