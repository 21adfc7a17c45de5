"""The structure oracle must notice every kind of difference the I/O suites rely on."""
import collections

import pytest
import torch

from ortcheck.checks import assert_same_structure, assert_tensors_close, map_leaves
from ortcheck.strategies.containers import ModelOutputLike, Pair, Record

T = torch.zeros(2)


@pytest.mark.parametrize("actual, expected", [
    ((T,), [T]),
    ({"a": T}, collections.OrderedDict(a=T)),
    (collections.OrderedDict(a=T), ModelOutputLike(a=T)),
    ({"a": T, "b": 1}, {"b": 1, "a": T}),
    ([T, 1], [T, True]),
    ([0.0], [-0.0]),
    ([1.0], [1]),
    (["a"], ["b"]),
    ([None], [0]),
    (Pair(T, 1), (T, 1)),
    (Record(T, 1), Record(T, 2)),
    ([T.clone()], [T]),
    ([T, T], [T]),
])
def test_differences_are_reported(actual, expected):
    with pytest.raises(AssertionError):
        assert_same_structure(actual, expected)


def test_identical_structure_passes_and_nan_equals_nan():
    data = {"x": [T, float("nan"), None], "y": Record(Pair(T, "s"), ModelOutputLike(k=T))}
    assert_same_structure(data, data)


def test_error_names_the_path():
    with pytest.raises(AssertionError, match=r"data\['x'\]\[1\]"):
        assert_same_structure({"x": [T, 1]}, {"x": [T, 2]})


def test_map_leaves_keeps_container_types():
    data = {"x": (T, [1, Pair(T, None)]), "y": Record(ModelOutputLike(k=T), 2.5)}
    mapped = map_leaves(data, lambda leaf: leaf)
    assert_same_structure(mapped, data)


@pytest.mark.parametrize("actual", [torch.zeros(2, dtype=torch.float64), torch.zeros(3), torch.ones(2)])
def test_tensor_closeness_checks_dtype_shape_values(actual):
    with pytest.raises(AssertionError):
        assert_tensors_close(actual, torch.zeros(2))
