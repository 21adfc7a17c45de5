"""Hypothesis strategies for nested inputs/outputs: tensors and constants inside containers.

Small named builders composed into :func:`nested_structures`. Leaves come before containers and
small before large in every ``one_of``, so failures shrink to a single leaf or a shallow container.
"""
from __future__ import annotations

import collections
import functools
from typing import Sequence

import torch
from hypothesis import strategies as st

from ortcheck.strategies.containers import FrozenRecord, ModelOutputLike, Pair, Record, Triple

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
ALL_DTYPES = FLOAT_DTYPES + (torch.int64, torch.int32, torch.bool)
LEAF_KINDS = ("tensor", "none", "bool", "int", "float", "str")
CONTAINER_KINDS = (
    "list", "tuple", "dict_str", "dict_int", "namedtuple", "dataclass", "ordereddict", "model_output",
)

# Named slices of the I/O space: a core every pipeline should handle, and one extra thing each.
# Suites parametrize over them so a deviation shows up as one failing feature, not one red property.
_CORE_LEAVES = ("tensor", "none", "str")
_CORE_CONTAINERS = ("list", "tuple", "dict_str", "namedtuple", "ordereddict", "model_output")
FEATURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "core": (_CORE_LEAVES, _CORE_CONTAINERS),
    "python_scalars": (_CORE_LEAVES + ("bool", "int", "float"), _CORE_CONTAINERS),
    "int_keys": (_CORE_LEAVES, _CORE_CONTAINERS + ("dict_int",)),
    "dataclasses": (_CORE_LEAVES, _CORE_CONTAINERS + ("dataclass",)),
}


@st.composite
def tensors(draw, dtypes: Sequence[torch.dtype] = ALL_DTYPES, max_rank: int = 4, max_side: int = 3,
            allow_zero_size: bool = True, requires_grad: bool | None = None) -> torch.Tensor:
    """A tensor with a drawn dtype and shape; float tensors may require grad.

    Values come from a drawn seed rather than drawn elements: shapes and dtypes are what
    flattening cares about, and a seed keeps examples cheap to generate and replay.
    """
    dtype = draw(st.sampled_from(list(dtypes)))
    shape = draw(st.lists(st.integers(0 if allow_zero_size else 1, max_side), max_size=max_rank))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    if dtype.is_floating_point:
        tensor = torch.randn(shape, generator=generator).to(dtype)
        grad = draw(st.booleans()) if requires_grad is None else requires_grad
        return tensor.requires_grad_(grad)
    if dtype is torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    return torch.randint(-100, 100, shape, generator=generator, dtype=dtype)


def constants(kinds: Sequence[str] = ("none", "bool", "int", "float", "str"), allow_nan: bool = False) -> st.SearchStrategy:
    """Non-tensor leaves: None, bool, int, float, str."""
    builders = {
        "none": st.none(),
        "bool": st.booleans(),
        "int": st.integers(-(2**31), 2**31),
        "float": st.floats(allow_nan=allow_nan, allow_infinity=allow_nan, width=64),
        "str": st.text(max_size=5),
    }
    return st.one_of([builders[kind] for kind in kinds])


def leaves(kinds: Sequence[str] = LEAF_KINDS, **tensor_kwargs) -> st.SearchStrategy:
    """One leaf of the given kinds (see :data:`LEAF_KINDS`)."""
    unknown = set(kinds) - set(LEAF_KINDS)
    if unknown:
        raise ValueError(f"unknown leaf kinds {sorted(unknown)}; valid: {', '.join(LEAF_KINDS)}")
    parts = [constants([k for k in kinds if k != "tensor"])] if set(kinds) - {"tensor"} else []
    if "tensor" in kinds:
        parts.append(tensors(**tensor_kwargs))
    return st.one_of(parts)


def containers_of(children: st.SearchStrategy, kinds: Sequence[str] = CONTAINER_KINDS, max_size: int = 3) -> st.SearchStrategy:
    """One container of the given kinds (see :data:`CONTAINER_KINDS`) holding ``children``."""
    unknown = set(kinds) - set(CONTAINER_KINDS)
    if unknown:
        raise ValueError(f"unknown container kinds {sorted(unknown)}; valid: {', '.join(CONTAINER_KINDS)}")
    items = st.lists(children, max_size=max_size)
    str_keys = st.dictionaries(st.text("abcxyz_", min_size=1, max_size=4), children, max_size=max_size)
    builders = {
        "list": items,
        "tuple": items.map(tuple),
        "dict_str": str_keys,
        "dict_int": st.dictionaries(st.integers(-3, 10), children, max_size=max_size),
        "namedtuple": st.one_of(st.builds(Pair, children, children), st.builds(Triple, children, children, children)),
        "dataclass": st.one_of(st.builds(FrozenRecord, children), st.builds(Record, children, children)),
        "ordereddict": str_keys.map(collections.OrderedDict),
        "model_output": str_keys.map(ModelOutputLike),
    }
    return st.one_of([builders[kind] for kind in kinds])


def nested_structures(leaf_kinds: Sequence[str] = LEAF_KINDS, container_kinds: Sequence[str] = CONTAINER_KINDS,
                      max_depth: int = 6, max_size: int = 3, **tensor_kwargs) -> st.SearchStrategy:
    """Arbitrary nesting of ``container_kinds`` around ``leaf_kinds``, up to ``max_depth`` levels.

    ``tensor_kwargs`` go to :func:`tensors` (``dtypes``, ``max_rank``, ``max_side``, ...).
    """
    return _up_to(max_depth, leaves(leaf_kinds, **tensor_kwargs), tuple(container_kinds), max_size)


@st.composite
def _up_to_depth(draw, depth: int, leaf: st.SearchStrategy, container_kinds: tuple[str, ...], max_size: int):
    # Recursing inside a composite keeps the strategy's repr one level deep; composing
    # one_of(leaf, containers_of(...)) six times gives a repr that grows exponentially with depth.
    if depth == 0 or not draw(st.booleans()):  # shrinks towards False: a leaf
        return draw(leaf)
    return draw(_containers_below(depth, leaf, container_kinds, max_size))


@functools.lru_cache(maxsize=None)
def _up_to(depth, leaf, container_kinds, max_size) -> st.SearchStrategy:
    return _up_to_depth(depth, leaf, container_kinds, max_size)


@functools.lru_cache(maxsize=None)
def _containers_below(depth, leaf, container_kinds, max_size) -> st.SearchStrategy:
    """Built once per level, not per draw: strategy construction dominates generation otherwise."""
    return containers_of(_up_to(depth - 1, leaf, container_kinds, max_size), container_kinds, max_size)


def feature_structures(feature: str, **kwargs) -> st.SearchStrategy:
    """:func:`nested_structures` restricted to one of :data:`FEATURES`."""
    if feature not in FEATURES:
        raise ValueError(f"unknown feature {feature!r}; valid: {', '.join(FEATURES)}")
    leaf_kinds, container_kinds = FEATURES[feature]
    return nested_structures(leaf_kinds, container_kinds, **kwargs)


_WRAP_ONE = {
    "list": lambda child: [child],
    "tuple": lambda child: (child,),
    "dict_str": lambda child: {"k": child},
    "dict_int": lambda child: {0: child},
    "namedtuple": lambda child: Pair(child, None),
    "dataclass": FrozenRecord,
    "ordereddict": lambda child: collections.OrderedDict(k=child),
    "model_output": lambda child: ModelOutputLike(k=child),
}


def deep_chain(depth: int, inner: st.SearchStrategy | None = None,
               container_kinds: Sequence[str] = CONTAINER_KINDS) -> st.SearchStrategy:
    """Exactly ``depth`` containers, each holding the next: reaches the depth bound every time."""
    kinds = st.lists(st.sampled_from(list(container_kinds)), min_size=depth, max_size=depth)

    def wrap(args):
        chain, value = args
        for kind in reversed(chain):
            value = _WRAP_ONE[kind](value)
        return value

    return st.tuples(kinds, inner if inner is not None else leaves()).map(wrap)
