"""Property: unflatten(flatten(x)) is x — same container types, constants and tensor objects."""
import pytest
from hypothesis import given

from ortcheck.checks import assert_same_structure
from ortcheck.impls import Capability
from ortcheck.strategies import deep_chain, nested_structures

pytestmark = pytest.mark.requires(Capability.IO_ROUNDTRIP)


def _assert_roundtrip(impl, data):
    tensors, schema = impl.flatten(data)
    assert_same_structure(impl.unflatten(tensors, schema), data)


@given(data=nested_structures())
def test_roundtrip(impl, data):
    _assert_roundtrip(impl, data)


@given(data=deep_chain(8))
def test_roundtrip_deep_nesting(impl, data):
    _assert_roundtrip(impl, data)
