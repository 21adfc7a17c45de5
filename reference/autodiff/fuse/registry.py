"""The registry of backward-graph rewrites and the plain loop that runs them."""
from __future__ import annotations

from typing import Callable, Iterable

import onnx

Rewrite = Callable[[onnx.ModelProto], onnx.ModelProto]

REWRITES: dict[str, Rewrite] = {}
# Per rewrite, the op types it starts from: groups of which the graph must hold one op each, or the
# rewrite has nothing to match and is not run (building its facts is most of a rewrite's cost). Run,
# it would only have swept dead nodes, which the first rewrite (no needs: every graph) already did.
NEEDS: dict[str, tuple[frozenset[str], ...]] = {}

PRODUCTS = frozenset({"MatMul", "Gemm", "FusedMatMul"})


def rewrite(name: str, needs: Iterable[Iterable[str]] = ()) -> Callable[[Rewrite], Rewrite]:
    """Register the decorated graph-to-graph function under ``name``; it runs after those before it,
    on graphs holding an op of each group in ``needs``."""

    def register(function: Rewrite) -> Rewrite:
        if name in REWRITES:
            raise ValueError(f"rewrite {name!r} already registered")
        REWRITES[name] = function
        NEEDS[name] = tuple(frozenset(group) for group in needs)
        return function

    return register


def fuse(model: onnx.ModelProto, skip: Iterable[str] = ()) -> onnx.ModelProto:
    """``model`` after every registered rewrite not named in ``skip``; ``model`` itself is unchanged."""
    unknown = set(skip) - set(REWRITES)
    if unknown:
        raise ValueError(f"unknown rewrites {sorted(unknown)}; valid: {', '.join(REWRITES)}")
    for name, function in REWRITES.items():
        if name not in skip and _holds(model, NEEDS[name]):
            model = function(model)
    return model


def _holds(model: onnx.ModelProto, needs: tuple[frozenset[str], ...]) -> bool:
    if not needs:
        return True
    present = {node.op_type for node in model.graph.node}
    return all(group & present for group in needs)
