"""Graph rewrites to fewer kernels, applied by the gradient builder to both graphs.

Each rewrite is a graph-to-graph function in a module of its own, registered under a name; the
loop in :func:`fuse` runs them once each, in registration order, each only on a graph holding the
ops it starts from (the order matters: duplicates are merged before transposes are folded into the
one product that reads them, and transposes are folded before scales are, since only a fused
product takes a scale; a bias goes in last, since a scale would not scale it). The builder runs
them on the forward and the backward graph before the memory optimizer sees them, so every
recompute level runs the same graphs.
"""
from reference.autodiff.fuse.registry import REWRITES, fuse, rewrite
from reference.autodiff.fuse import (  # noqa: F401  (importing a rewrite registers it, in this order)
    common_subexpressions, transposed_operands, transposed_results, scaled_products, summed_products,
    biased_products,
)

__all__ = ["REWRITES", "fuse", "rewrite"]
