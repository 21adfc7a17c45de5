"""Public hypothesis strategies: nested I/O structures, layer stacks, transition actions.

Strategies only generate values: they import nothing from the implementations, the oracles or the
reference pipeline (tests/harness/test_layering.py holds them to it).
"""
from ortcheck.strategies.containers import ContainerKind, LeafKind
from ortcheck.strategies.nested_io import (
    ALL_DTYPES, CONTAINER_KINDS, FEATURES, FLOAT_DTYPES, LEAF_KINDS, constants, containers_of, deep_chain,
    feature_exemplar, feature_structures, leaves, nested_structures, tensors,
)

__all__ = [
    "ALL_DTYPES", "CONTAINER_KINDS", "ContainerKind", "FEATURES", "FLOAT_DTYPES", "LEAF_KINDS", "LeafKind",
    "constants", "containers_of", "deep_chain", "feature_exemplar", "feature_structures", "leaves", "nested_structures", "tensors",
    "layer_stacks",
]

# Imported last and eagerly: the function must shadow its own submodule's name on the package.
from ortcheck.strategies.layer_stacks import layer_stacks  # noqa: E402
