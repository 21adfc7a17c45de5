"""Work remembered per graph: the same graph is inferred and differentiated many times over.

The fuse stage rebuilds its facts after each rewrite, and most rewrites change nothing in a given
graph; a recompute build infers the forward graph the plain build already inferred, and
differentiates the graph its plain twin did (a recompute property builds both for each example).
Keyed by the graph's deterministic serialization (its SHA-256), so any edit, a renamed value or a
changed attribute, is another key. Shape facts are shared between callers (read them, never edit
them); gradient graphs are copied to each caller and never remembered while a fault is injected.
"""
from __future__ import annotations

import collections
import functools
import hashlib
from typing import Callable, TypeVar

import onnx

T = TypeVar("T")
MAX_GRAPHS = 32  # per function: a build's graphs and the rewrites' intermediate ones


def per_graph(function: Callable[..., T] | None = None, *, copy: Callable[[T], T] | None = None,
              unless: Callable[[], bool] | None = None):
    """``function(model, ...)`` computed once per (graph, other arguments) among the last :data:`MAX_GRAPHS`;
    an exception is raised again on the next call, not remembered. ``copy``: each caller gets its
    own copy of the remembered value (for values callers edit); while ``unless()`` holds, calls are
    computed afresh and nothing is remembered."""
    if function is None:
        return functools.partial(per_graph, copy=copy, unless=unless)
    remembered: collections.OrderedDict = collections.OrderedDict()

    @functools.wraps(function)
    def cached(model: onnx.ModelProto, *args, **kwargs) -> T:
        if unless is not None and unless():
            return function(model, *args, **kwargs)
        key = (hashlib.sha256(model.SerializeToString(deterministic=True)).digest(), args, tuple(sorted(kwargs.items())))
        if key in remembered:
            remembered.move_to_end(key)
            value = remembered[key]
        else:
            value = remembered[key] = function(model, *args, **kwargs)
            if len(remembered) > MAX_GRAPHS:
                remembered.popitem(last=False)
        return value if copy is None else copy(value)

    return cached
