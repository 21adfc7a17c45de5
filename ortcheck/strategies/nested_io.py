"""Hypothesis strategies for nested inputs/outputs: tensors and constants inside containers.

Small named builders composed into :func:`nested_structures`. Leaves come before containers and
small before large in every ``one_of``, so failures shrink to a single leaf or a shallow container.
"""
from __future__ import annotations

import functools
from typing import Sequence

import torch
from hypothesis import strategies as st

from ortcheck.nested import replace_at, sites
from ortcheck.strategies.containers import CONTAINER_KINDS as _CONTAINERS, CORE, FEATURES, LEAF_KINDS as _LEAVES

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
ALL_DTYPES = FLOAT_DTYPES + (torch.int64, torch.int32, torch.bool)
LEAF_KINDS = tuple(_LEAVES)
CONTAINER_KINDS = tuple(_CONTAINERS)


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
    _check_known("leaf kinds", kinds, [k for k in LEAF_KINDS if k != "tensor"])
    if allow_nan and "float" in kinds:
        others = [_LEAVES[kind].values for kind in kinds if kind != "float"]
        return st.one_of(*others, st.floats(allow_nan=True, allow_infinity=True, width=64))
    return st.one_of([_LEAVES[kind].values for kind in kinds])


def leaves(kinds: Sequence[str] = LEAF_KINDS, **tensor_kwargs) -> st.SearchStrategy:
    """One leaf of the given kinds (see :data:`LEAF_KINDS`)."""
    _check_known("leaf kinds", kinds, LEAF_KINDS)
    parts = [constants([k for k in kinds if k != "tensor"])] if set(kinds) - {"tensor"} else []
    if "tensor" in kinds:
        parts.append(tensors(**tensor_kwargs))
    return st.one_of(parts)


def containers_of(children: st.SearchStrategy, kinds: Sequence[str] = CONTAINER_KINDS, max_size: int = 3) -> st.SearchStrategy:
    """One container of the given kinds (see :data:`CONTAINER_KINDS`) holding ``children``."""
    _check_known("container kinds", kinds, CONTAINER_KINDS)
    return st.one_of([_CONTAINERS[kind].build(children, max_size) for kind in CONTAINER_KINDS if kind in kinds])


def nested_structures(leaf_kinds: Sequence[str] = LEAF_KINDS, container_kinds: Sequence[str] = CONTAINER_KINDS,
                      max_depth: int = 6, max_size: int = 3, **tensor_kwargs) -> st.SearchStrategy:
    """Arbitrary nesting of ``container_kinds`` around ``leaf_kinds``, up to ``max_depth`` levels.

    ``tensor_kwargs`` go to :func:`tensors` (``dtypes``, ``max_rank``, ``max_side``, ...). The same
    arguments give the same strategy object: suites call this inside a test, once per example, and
    a new leaf strategy would build (and hypothesis validate) the whole tree of levels anew each
    time, a third of an io suite's time.
    """
    return _up_to(max_depth, _leaves_once(tuple(leaf_kinds), _hashable(tensor_kwargs)), tuple(container_kinds), max_size)


@functools.lru_cache(maxsize=None)
def _leaves_once(kinds: tuple[str, ...], tensor_kwargs: tuple) -> st.SearchStrategy:
    return leaves(kinds, **{name: value for name, value in tensor_kwargs})


def _hashable(tensor_kwargs: dict) -> tuple:
    """``tensor_kwargs`` as a cache key (sequences as tuples)."""
    return tuple(sorted((name, tuple(value) if isinstance(value, (list, tuple)) else value)
                        for name, value in tensor_kwargs.items()))


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
    """:func:`nested_structures` restricted to one of :data:`FEATURES`; every example of a feature
    other than ``core`` holds at least one of the feature's own kinds, so a pipeline that can't
    handle the feature fails on every example, not only on lucky draws."""
    if feature not in FEATURES:
        raise ValueError(f"unknown feature {feature!r}; valid: {', '.join(FEATURES)}")
    leaf_kinds, container_kinds = FEATURES[feature]
    structures = nested_structures(leaf_kinds, container_kinds, **kwargs)
    if feature == CORE:
        return structures
    return _holding(structures, _feature_exemplars(feature))


def feature_exemplar(feature: str) -> list:
    """One structure holding every kind of ``feature`` once (each container around a fresh float
    tensor that requires grad, each leaf kind's example) beside a tensor of its own: suites run it
    before any drawn example, so a pipeline that mishandles any one kind of the feature, or the
    tensors beside it, fails under every seed."""
    if feature not in FEATURES:
        raise ValueError(f"unknown feature {feature!r}; valid: {', '.join(FEATURES)}")
    leaf_kinds, container_kinds = FEATURES[feature]
    own = [k for k in container_kinds if _CONTAINERS[k].feature == feature] if feature != CORE else container_kinds
    values = [_LEAVES[k].example for k in leaf_kinds if k != "tensor" and _LEAVES[k].feature == feature]
    tensor = lambda: torch.arange(2.0).requires_grad_()  # noqa: E731
    return [tensor(), *(_CONTAINERS[k].wrap(tensor()) for k in own), *values]


@functools.lru_cache(maxsize=None)
def _feature_exemplars(feature: str) -> st.SearchStrategy:
    """Functions node -> node plus one value of a kind ``feature`` adds."""
    wraps = [st.just(kind.wrap) for kind in _CONTAINERS.values() if kind.feature == feature]
    wraps += [kind.values.map(lambda value: lambda node: [node, value])
              for kind in _LEAVES.values() if kind.feature == feature]
    return st.one_of(wraps)


@st.composite
def _holding(draw, structures: st.SearchStrategy, exemplars: st.SearchStrategy):
    data = draw(structures)
    site = draw(st.sampled_from(sites(data, lambda node: True)))
    return replace_at(data, site, draw(exemplars))


def deep_chain(depth: int, inner: st.SearchStrategy | None = None,
               container_kinds: Sequence[str] = CONTAINER_KINDS) -> st.SearchStrategy:
    """Exactly ``depth`` containers, each holding the next: reaches the depth bound every time."""
    _check_known("container kinds", container_kinds, CONTAINER_KINDS)
    kinds = st.lists(st.sampled_from(list(container_kinds)), min_size=depth, max_size=depth)

    def wrap(args):
        chain, value = args
        for kind in reversed(chain):
            value = _CONTAINERS[kind].wrap(value)
        return value

    return st.tuples(kinds, inner if inner is not None else leaves()).map(wrap)


def _check_known(what: str, given: Sequence[str], known: Sequence[str]) -> None:
    unknown = set(given) - set(known)
    if unknown:
        raise ValueError(f"unknown {what} {sorted(unknown)}; valid: {', '.join(known)}")
