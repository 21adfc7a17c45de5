"""Unit tests of reference/io beyond the round-trip property the suites check."""
import collections
import dataclasses

import pytest
import torch

from reference.nested_io import Constant, TensorSpec, flatten, unflatten


class CustomDict(dict):
    pass


class CustomList(list):
    pass


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: object
    b: object = None


def test_tensors_come_out_in_pytree_order():
    a, b, c = torch.zeros(1), torch.ones(2), torch.zeros(3)
    tensors, _ = flatten({"first": [a, 1], "second": (b, {"k": c})})
    assert [id(t) for t in tensors] == [id(a), id(b), id(c)]


@pytest.mark.parametrize("container", [CustomDict(x=torch.zeros(1)), CustomList([torch.zeros(1)]),
                                       Frozen(torch.zeros(1), [torch.ones(1)])])
def test_unknown_containers_are_registered_not_opaque(container):
    tensors, schema = flatten(container)
    assert len(tensors) >= 1
    rebuilt = unflatten(tensors, schema)
    assert type(rebuilt) is type(container)


def test_requires_grad_is_recorded_but_not_part_of_equality():
    _, with_grad = flatten([torch.zeros(2, requires_grad=True)])
    _, without = flatten([torch.zeros(2)])
    assert with_grad == without
    assert with_grad.requires_grad == (True,) and without.requires_grad == (False,)


@pytest.mark.parametrize("a, b", [(True, 1), (0.0, -0.0), (1, 1.0), (None, False)])
def test_constants_compare_by_type_and_exact_value(a, b):
    assert Constant(a) != Constant(b)


def test_nan_constants_are_equal():
    assert Constant(float("nan")) == Constant(float("nan"))


def test_tensor_spec_ignores_sizes():
    assert TensorSpec.of(torch.zeros(2, 3)) == TensorSpec.of(torch.zeros(5, 0))
    assert TensorSpec.of(torch.zeros(2, 3)) != TensorSpec.of(torch.zeros(2))


def test_unflatten_rejects_wrong_tensor_count():
    tensors, schema = flatten([torch.zeros(1), torch.zeros(2)])
    with pytest.raises(ValueError, match="holds 2 tensors, got 1"):
        unflatten(tensors[:1], schema)


def test_ordered_dict_key_order_is_part_of_schema():
    _, ab = flatten(collections.OrderedDict(a=1, b=2))
    _, ba = flatten(collections.OrderedDict(b=2, a=1))
    assert ab != ba
