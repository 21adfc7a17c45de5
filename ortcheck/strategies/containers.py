"""The kinds of leaf and container the nested-I/O strategies build: one record per kind.

Each record says what values of the kind are, how to generate them, the smallest container of the
kind around one child, which look-alike of another type a schema must tell it apart from, and the
feature (a named slice of the I/O space, see :data:`FEATURES`) that adds it. Strategies, mutations
and features are all derived from these records, so a new kind is one entry here. The container
types are defined at module level so they pickle and repr.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, NamedTuple

from hypothesis import strategies as st


class Pair(NamedTuple):
    first: Any
    second: Any


class Triple(NamedTuple):
    x: Any
    y: Any
    z: Any


@dataclasses.dataclass
class Record:
    value: Any
    extra: Any


@dataclasses.dataclass(frozen=True)
class FrozenRecord:
    value: Any


class ModelOutputLike(collections.OrderedDict):
    """Like transformers' ``ModelOutput``: an OrderedDict subclass with attribute access."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


CORE = "core"


@dataclasses.dataclass(frozen=True)
class LeafKind:
    """A kind of non-tensor leaf (tensors have their own strategy, :func:`~ortcheck.strategies.tensors`)."""

    name: str
    values: st.SearchStrategy | None  # None: tensors
    example: Any                      # one value of the kind
    feature: str = CORE


@dataclasses.dataclass(frozen=True)
class ContainerKind:
    name: str
    types: tuple[type, ...]
    build: Callable[[st.SearchStrategy, int], st.SearchStrategy]  # (children, max_size) -> containers
    wrap: Callable[[Any], Any]                                     # the smallest one holding ``child``
    retype: Callable[[Any], Any] | None = None                     # same children, a look-alike type
    feature: str = CORE


def _str_keys(children: st.SearchStrategy, max_size: int) -> st.SearchStrategy:
    return st.dictionaries(st.text("abcxyz_", min_size=1, max_size=4), children, max_size=max_size)


def _items(children: st.SearchStrategy, max_size: int) -> st.SearchStrategy:
    return st.lists(children, max_size=max_size)


LEAF_KINDS: dict[str, LeafKind] = {kind.name: kind for kind in (
    LeafKind("tensor", None, None),
    LeafKind("none", st.none(), None),
    LeafKind("str", st.text(max_size=5), "s"),
    LeafKind("bool", st.booleans(), False, feature="python_scalars"),
    LeafKind("int", st.integers(-(2**31), 2**31), 0, feature="python_scalars"),
    LeafKind("float", st.floats(allow_nan=False, allow_infinity=False, width=64), 0.5, feature="python_scalars"),
)}

CONTAINER_KINDS: dict[str, ContainerKind] = {kind.name: kind for kind in (
    ContainerKind("list", (list,), _items, lambda child: [child], retype=tuple),
    ContainerKind("tuple", (tuple,), lambda c, n: _items(c, n).map(tuple), lambda child: (child,), retype=list),
    ContainerKind("dict_str", (dict,), _str_keys, lambda child: {"k": child}, retype=collections.OrderedDict),
    ContainerKind("namedtuple", (Pair, Triple),
                  lambda c, n: st.one_of(st.builds(Pair, c, c), st.builds(Triple, c, c, c)),
                  lambda child: Pair(child, None), retype=tuple),
    ContainerKind("ordereddict", (collections.OrderedDict,), lambda c, n: _str_keys(c, n).map(collections.OrderedDict),
                  lambda child: collections.OrderedDict(k=child), retype=ModelOutputLike),
    ContainerKind("model_output", (ModelOutputLike,), lambda c, n: _str_keys(c, n).map(ModelOutputLike),
                  lambda child: ModelOutputLike(k=child), retype=dict),
    ContainerKind("dict_int", (dict,), lambda c, n: st.dictionaries(st.integers(-3, 10), c, max_size=n),
                  lambda child: {0: child}, feature="int_keys"),
    ContainerKind("dataclass", (FrozenRecord, Record),
                  lambda c, n: st.one_of(st.builds(FrozenRecord, c), st.builds(Record, c, c)),
                  FrozenRecord, feature="dataclasses"),
)}


def _features() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """feature -> (leaf kinds, container kinds): the core kinds, plus the feature's own."""
    kinds = [*LEAF_KINDS.values(), *CONTAINER_KINDS.values()]
    names = dict.fromkeys([CORE] + [kind.feature for kind in kinds if kind.feature != CORE])
    return {feature: (tuple(k.name for k in LEAF_KINDS.values() if k.feature in (CORE, feature)),
                      tuple(k.name for k in CONTAINER_KINDS.values() if k.feature in (CORE, feature)))
            for feature in names}


# Named slices of the I/O space: a core every pipeline should handle, and one extra thing each.
# Suites parametrize over them so a deviation shows up as one failing feature, not one red property.
FEATURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = _features()
