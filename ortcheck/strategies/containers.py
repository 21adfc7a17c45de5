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
import enum
import importlib
import importlib.util
from typing import Any, Callable, NamedTuple

import torch
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


class _NamedRepr:
    """Subclasses print as ``Name(...)``: a failing example must show the type, not pass for a dict."""

    def __repr__(self):
        return f"{type(self).__name__}({super().__repr__()})"


class Batch(_NamedRepr, dict):
    """A plain dict subclass (a user's batch type)."""


class Features(_NamedRepr, collections.UserDict):
    """A ``UserDict``, as transformers' ``BatchEncoding`` is: a Mapping that is no dict."""


class Items(_NamedRepr, list):
    pass


class Coords(_NamedRepr, tuple):
    """A tuple subclass without fields (not a namedtuple)."""


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Mode(enum.IntEnum):
    """Equal to an int (``Mode.EVAL == 1``) yet not one: a schema comparing by ``==`` misses it."""
    TRAIN = 0
    EVAL = 1


class Reduction(enum.StrEnum):
    MEAN = "mean"
    SUM = "sum"


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


def _structseq(cls: type) -> Callable[[st.SearchStrategy, int], st.SearchStrategy]:
    """torch's own structured results (``torch.return_types.max``: values and indices)."""
    return lambda children, _max_size: st.tuples(children, children).map(cls)


def _transformers_kinds() -> list[ContainerKind]:
    """Hugging Face's own containers, where transformers is installed: ``BatchEncoding`` (what a
    tokenizer returns: a ``UserDict``, not a dict) and real ``ModelOutput`` dataclasses (keys only
    for the fields that are not None). Imported on first draw: transformers takes seconds to load."""
    if importlib.util.find_spec("transformers") is None:
        return []
    return [
        ContainerKind("batch_encoding", (), lambda c, n: st.deferred(lambda: _str_keys(c, n).map(_hf("tokenization_utils_base", "BatchEncoding"))),
                      lambda child: _hf("tokenization_utils_base", "BatchEncoding")({"input_ids": child}), feature="transformers"),
        ContainerKind("hf_model_output", (), lambda c, n: st.deferred(lambda: _model_outputs(c)),
                      lambda child: _hf("modeling_outputs", "BaseModelOutput")(torch.ones(1), torch.ones(1), child),
                      feature="transformers"),
    ]


def _hf(module: str, name: str) -> type:
    return getattr(importlib.import_module(f"transformers.{module}"), name)


def _model_outputs(children: st.SearchStrategy) -> st.SearchStrategy:
    # The first two fields are tensors, as models return them: ModelOutput reads a non-tensor first
    # field, with every other field None, as the key/value pairs to build itself from; with the
    # second a tensor too, a drawn or mutated child in the third can never trigger that.
    tensor = st.integers(1, 3).map(lambda n: torch.randn(n))
    optional = st.one_of(st.none(), children)
    return st.one_of(st.builds(_hf("modeling_outputs", "BaseModelOutput"), tensor, tensor, optional),
                     st.builds(_hf("modeling_outputs", "CausalLMOutput"), tensor, tensor, optional))


LEAF_KINDS: dict[str, LeafKind] = {kind.name: kind for kind in (
    LeafKind("tensor", None, None),
    LeafKind("none", st.none(), None),
    LeafKind("str", st.text(max_size=5), "s"),
    LeafKind("bool", st.booleans(), False, feature="python_scalars"),
    LeafKind("int", st.integers(-(2**31), 2**31), 0, feature="python_scalars"),
    LeafKind("float", st.floats(allow_nan=False, allow_infinity=False, width=64), 0.5, feature="python_scalars"),
    LeafKind("enum", st.sampled_from([*Color, *Mode, *Reduction]), Mode.EVAL, feature="enums"),
    LeafKind("torch_size", st.lists(st.integers(0, 5), max_size=4).map(torch.Size), torch.Size([2, 3]),
             feature="torch_types"),
    LeafKind("dtype", st.sampled_from([torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool]),
             torch.float32, feature="torch_types"),
    LeafKind("device", st.sampled_from([torch.device("cpu"), torch.device("cuda", 0), torch.device("meta")]),
             torch.device("cpu"), feature="torch_types"),
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
    ContainerKind("defaultdict", (collections.defaultdict,),
                  lambda c, n: _str_keys(c, n).map(lambda d: collections.defaultdict(list, d)),
                  lambda child: collections.defaultdict(list, k=child), retype=dict, feature="stdlib"),
    ContainerKind("deque", (collections.deque,), lambda c, n: _items(c, n).map(collections.deque),
                  lambda child: collections.deque([child]), retype=list, feature="stdlib"),
    ContainerKind("userdict", (Features,), lambda c, n: _str_keys(c, n).map(Features),
                  lambda child: Features(k=child), retype=dict, feature="stdlib"),
    ContainerKind("dict_subclass", (Batch,), lambda c, n: _str_keys(c, n).map(Batch),
                  lambda child: Batch(k=child), retype=dict, feature="stdlib"),
    ContainerKind("list_subclass", (Items,), lambda c, n: _items(c, n).map(Items),
                  lambda child: Items([child]), retype=list, feature="stdlib"),
    ContainerKind("tuple_subclass", (Coords,), lambda c, n: _items(c, n).map(Coords),
                  lambda child: Coords([child]), retype=tuple, feature="stdlib"),
    ContainerKind("return_types", (torch.return_types.max, torch.return_types.sort),
                  lambda c, n: st.one_of(_structseq(torch.return_types.max)(c, n), _structseq(torch.return_types.sort)(c, n)),
                  lambda child: torch.return_types.max((child, None)), retype=tuple, feature="torch_types"),
    *_transformers_kinds(),
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
