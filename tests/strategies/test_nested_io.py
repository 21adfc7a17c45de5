"""The nested-I/O strategy reaches every configured kind, honours its bounds and shrinks small."""
import collections

import pytest
import torch
from hypothesis import Phase, find, given, settings

from ortcheck.nested import children, leaves, map_leaves
from ortcheck.strategies import (
    ALL_DTYPES, FEATURES, containers_of, deep_chain, feature_exemplar, feature_structures, leaves as leaf_strategy,
    nested_structures, tensors,
)
from ortcheck.strategies import containers as kinds
from ortcheck.strategies.containers import FrozenRecord, ModelOutputLike, Pair, Record, Triple

FIND = settings(max_examples=2000, database=None, derandomize=True)
# that a kind is drawn at all: the first draw that has it will do (shrinking it took most of the time)
REACHES = settings(FIND, phases=[Phase.generate])


def depth(value):
    pairs = children(value)
    return 0 if pairs is None else 1 + max((depth(c) for _, c in pairs), default=0)


def contains(value, predicate):
    if predicate(value):
        return True
    return any(contains(child, predicate) for _, child in children(value) or [])


CONTAINER_TYPES = [list, tuple, dict, collections.OrderedDict, ModelOutputLike, Pair, Triple, Record, FrozenRecord]


@pytest.mark.parametrize("container_type", CONTAINER_TYPES)
def test_every_container_type_is_generated(container_type):
    find(nested_structures(), lambda x: contains(x, lambda v: type(v) is container_type), settings=REACHES)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_is_generated(dtype):
    find(nested_structures(), lambda x: contains(x, lambda v: isinstance(v, torch.Tensor) and v.dtype == dtype), settings=REACHES)


@pytest.mark.parametrize("kind", [type(None), bool, int, float, str])
def test_every_constant_kind_is_generated(kind):
    find(nested_structures(), lambda x: contains(x, lambda v: type(v) is kind), settings=REACHES)


def test_int_keyed_dicts_zero_size_rank4_and_grad_tensors_are_generated():
    find(nested_structures(), lambda x: contains(x, lambda v: isinstance(v, dict) and any(isinstance(k, int) for k in v)), settings=REACHES)
    find(tensors(), lambda t: t.dim() == 4 and t.numel() == 0, settings=REACHES)
    find(tensors(), lambda t: t.dim() == 0, settings=REACHES)
    find(tensors(), lambda t: t.requires_grad, settings=REACHES)
    find(nested_structures(), lambda x: contains(x, lambda v: isinstance(v, (list, dict)) and len(v) == 0), settings=REACHES)


def test_depth_six_is_reachable_and_bounded():
    find(nested_structures(max_depth=6), lambda x: depth(x) >= 5, settings=REACHES)

    @settings(max_examples=100, database=None, derandomize=True)
    @given(nested_structures(max_depth=3))
    def bounded(x):
        assert depth(x) <= 3

    bounded()


@given(deep_chain(7))
def test_deep_chain_has_exact_depth(x):
    assert depth(x) == 7


def test_configuration_restricts_kinds():
    @settings(max_examples=100, database=None, derandomize=True)
    @given(nested_structures(leaf_kinds=["int"], container_kinds=["tuple"]))
    def only_ints_in_tuples(x):
        assert all(type(leaf) is int for leaf in leaves(x))
        assert not contains(x, lambda v: isinstance(v, (list, dict)))

    only_ints_in_tuples()


def test_the_same_arguments_give_the_same_strategy_object():
    """Suites build their strategy inside the test, once per example: a new object each time would
    be built and validated anew (the whole tree of levels), a third of an io suite's time."""
    assert nested_structures() is nested_structures()
    assert nested_structures(dtypes=[torch.float32], max_depth=3) is nested_structures(dtypes=(torch.float32,), max_depth=3)
    assert nested_structures(dtypes=[torch.float32]) is not nested_structures(dtypes=[torch.float64])
    assert nested_structures(leaf_kinds=["int"]) is not nested_structures()


def test_unknown_kinds_are_rejected_with_the_valid_ones():
    with pytest.raises(ValueError, match="valid: tensor"):
        leaf_strategy(["complex"])
    with pytest.raises(ValueError, match="valid: list"):
        containers_of(leaf_strategy(), ["set"])


def test_shrinks_to_a_minimal_example():
    found = find(nested_structures(), lambda x: contains(x, lambda v: isinstance(v, torch.Tensor) and v.dtype == torch.bfloat16),
                 settings=FIND)
    assert isinstance(found, torch.Tensor) and found.dim() == 0


@pytest.mark.parametrize("feature", [f for f in FEATURES if f != "core"])
def test_each_feature_draws_each_of_its_kinds_and_its_exemplar_holds_them_all(feature):
    """A feature's exemplar runs before the draws: it must hold every kind the feature adds, and the
    draws must reach each kind too."""
    leaf_kinds, container_kinds = FEATURES[feature]
    own = [kinds.CONTAINER_KINDS[k] for k in container_kinds if kinds.CONTAINER_KINDS[k].feature == feature]
    own_leaves = [kinds.LEAF_KINDS[k] for k in leaf_kinds if kinds.LEAF_KINDS[k].feature == feature]
    exemplar = feature_exemplar(feature)
    for kind in own:
        made = type(kind.wrap(0))
        assert contains(exemplar, lambda v: type(v) is made), f"{kind.name} missing from the exemplar"
        find(feature_structures(feature), lambda x: contains(x, lambda v: type(v) is made), settings=REACHES)
    for kind in own_leaves:
        assert contains(exemplar, lambda v: type(v) is type(kind.example)), f"{kind.name} missing from the exemplar"


def test_the_harness_walk_rebuilds_mappings_sequences_and_keeps_a_default_factory():
    data = [collections.defaultdict(list, a=torch.ones(1)), collections.deque([torch.ones(1)]),
            kinds.Features(b=torch.ones(1)), torch.Size([2, 3])]
    rebuilt = map_leaves(data, lambda leaf: leaf * 2 if isinstance(leaf, torch.Tensor) else leaf)
    assert [type(v) for v in rebuilt] == [type(v) for v in data]
    assert rebuilt[0].default_factory is list and rebuilt[2]["b"].item() == 2.0 and rebuilt[3] == torch.Size([2, 3])
