"""The registry of backward-graph rewrites and the plain loop that runs them."""
from __future__ import annotations

from typing import Callable, Iterable

import onnx

Rewrite = Callable[[onnx.ModelProto], onnx.ModelProto]

REWRITES: dict[str, Rewrite] = {}


def rewrite(name: str) -> Callable[[Rewrite], Rewrite]:
    """Register the decorated graph-to-graph function under ``name``; it runs after those before it."""

    def register(function: Rewrite) -> Rewrite:
        if name in REWRITES:
            raise ValueError(f"rewrite {name!r} already registered")
        REWRITES[name] = function
        return function

    return register


def fuse(model: onnx.ModelProto, skip: Iterable[str] = ()) -> onnx.ModelProto:
    """``model`` after every registered rewrite not named in ``skip``; ``model`` itself is unchanged."""
    unknown = set(skip) - set(REWRITES)
    if unknown:
        raise ValueError(f"unknown rewrites {sorted(unknown)}; valid: {', '.join(REWRITES)}")
    for name, function in REWRITES.items():
        if name not in skip:
            model = function(model)
    return model
