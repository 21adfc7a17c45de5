"""Public hypothesis strategies: nested I/O structures, layer stacks, 4-bit layers."""
from ortcheck.strategies.nested_io import (
    ALL_DTYPES, CONTAINER_KINDS, FLOAT_DTYPES, LEAF_KINDS, constants, containers_of, deep_chain, leaves,
    nested_structures, tensors,
)

__all__ = [
    "ALL_DTYPES", "CONTAINER_KINDS", "FLOAT_DTYPES", "LEAF_KINDS", "constants", "containers_of", "deep_chain",
    "leaves", "nested_structures", "tensors", "layer_stacks",
]


def __getattr__(name):
    # layer_stacks pulls in the block library; import it on first use only.
    if name == "layer_stacks":
        from ortcheck.strategies.layer_stacks import layer_stacks

        return layer_stacks
    raise AttributeError(name)
