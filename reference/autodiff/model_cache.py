"""Shape inference remembered per graph: the same graph is inferred many times over.

The fuse stage rebuilds its facts after each rewrite, and most rewrites change nothing in a given
graph; a recompute build infers the forward graph the plain build already inferred. Keyed by the
graph's deterministic serialization (its SHA-256), so any edit, a renamed value or a changed
attribute, is another key. The results are shared between callers: read them, never edit them.
"""
from __future__ import annotations

import collections
import functools
import hashlib
from typing import Callable, TypeVar

import onnx

T = TypeVar("T")
MAX_GRAPHS = 32  # per function: a build's graphs and the rewrites' intermediate ones


def per_graph(function: Callable[..., T]) -> Callable[..., T]:
    """``function(model, ...)`` computed once per (graph, other arguments) among the last :data:`MAX_GRAPHS`;
    an exception is raised again on the next call, not remembered."""
    remembered: collections.OrderedDict = collections.OrderedDict()

    @functools.wraps(function)
    def cached(model: onnx.ModelProto, *args, **kwargs) -> T:
        key = (hashlib.sha256(model.SerializeToString(deterministic=True)).digest(), args, tuple(sorted(kwargs.items())))
        if key in remembered:
            remembered.move_to_end(key)
            return remembered[key]
        value = remembered[key] = function(model, *args, **kwargs)
        if len(remembered) > MAX_GRAPHS:
            remembered.popitem(last=False)
        return value

    return cached
