"""Backward-graph rewrites to fewer kernels (issue 33), applied by the gradient builder.

Each rewrite is a graph-to-graph function in a module of its own, registered under a name; the
loop in :func:`fuse` runs them once each, in registration order (the order matters: duplicates are
merged before transposes are folded into the one product that reads them, and transposes are
folded before scales are, since only a fused product takes a scale). The builder runs them on the
backward graph before the memory optimizer sees it, so every recompute level runs the same graph.
"""
from reference.autodiff.fuse.registry import REWRITES, fuse, rewrite
from reference.autodiff.fuse import (  # noqa: F401  (importing a rewrite registers it, in this order)
    common_subexpressions, transposed_operands, transposed_results, scaled_products,
)

__all__ = ["REWRITES", "fuse", "rewrite"]
