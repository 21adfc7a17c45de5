"""Which ops a recompute plan may contain, and which of their inputs tracing follows.

The tiers follow what ORTModule 1.19.2 was measured to recompute (facts in docs/architecture.md,
"Recompute"): a base tier for levels 0 and 1, and heavier ops (Softmax, LayerNormalization, MatMul)
that only layer-wise recompute (level 1 and up) goes through. An input that is not traced must be
available in backward as it is: a graph input, a constant, a value stashed anyway, or a small
statically shaped value the plan stashes in its place (a kept leaf).
"""
from __future__ import annotations

import dataclasses

_SHAPE_OPS = ("Reshape", "Unsqueeze", "Squeeze", "Expand", "Tile", "Slice", "Split", "Concat", "Flatten")


@dataclasses.dataclass(frozen=True)
class Recomputable:
    traced_inputs: tuple[int, ...] | None  # None: every input
    min_level: int = 0                      # 0: any level; 1: only layer-wise recompute
    outputs: tuple[int, ...] | None = None  # outputs a recompute may replace (None: all)


ALLOW_LIST: dict[str, Recomputable] = {
    **{op: Recomputable((0, 1)) for op in ("Add", "Sub", "Mul", "Div", "Equal", "Less")},
    "Neg": Recomputable((0,)),
    "Where": Recomputable((0, 1, 2)),
    "Cast": Recomputable((0,)),
    **{op: Recomputable((0,)) for op in _SHAPE_OPS if op != "Concat"},
    "Concat": Recomputable(None),
    "Gather": Recomputable((0,)),
    "CumSum": Recomputable((0,)),
    # Dropout is recomputed from its stashed mask, never by drawing a new one (see rewrite.py).
    "Dropout": Recomputable((0,), outputs=(0,)),
    "Trilu": Recomputable((0,)),
    **{op: Recomputable((0,)) for op in ("Gelu", "FastGelu", "QuickGelu")},
    "BiasGelu": Recomputable((0, 1)),
    "Softmax": Recomputable((0,), min_level=1),
    "LayerNormalization": Recomputable((0, 1, 2), min_level=1),
    "SimplifiedLayerNormalization": Recomputable((0, 1), min_level=1),
    "MatMul": Recomputable((0, 1), min_level=1),
    # Not in ORTModule 1.19.2's list: a transpose moves values, so recomputing it changes no bit,
    # and layer-wise it is most of what stays stashed (attention's head transposes, weight
    # transposes): docs/architecture.md, "Recompute".
    "Transpose": Recomputable((0,), min_level=1),
    "FusedMatMul": Recomputable((0, 1), min_level=1),
    # A Linear layer's product with its bias, as reference.autodiff.fuse writes it (MatMul + Add).
    "Gemm": Recomputable((0, 1, 2), min_level=1),
}

# A value made by an op outside the allow-list may still end a plan, stashed in place of what the
# plan recomputes, when its shape is static and smaller than this (weights' transposes, shapes).
KEPT_LEAF_MAX_ELEMENTS = 1 << 20


def rule(op_type: str, domain: str, level: int) -> Recomputable | None:
    """The rule for ``op_type`` at ``level``, or None if a plan may not contain it there."""
    if domain not in ("", "ai.onnx", "com.microsoft"):
        return None
    found = ALLOW_LIST.get(op_type)
    return found if found is not None and level >= found.min_level else None


def traced(rule_: Recomputable, num_inputs: int) -> tuple[int, ...]:
    indices = range(num_inputs) if rule_.traced_inputs is None else rule_.traced_inputs
    return tuple(i for i in indices if i < num_inputs)
