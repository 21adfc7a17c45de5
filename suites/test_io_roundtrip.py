"""Property: unflatten(flatten(x)) is x — same container types, constants and tensor objects.

Parametrized by feature (``ortcheck.strategies.FEATURES``): a core every pipeline should handle,
then one extra kind of leaf or container each, so a deviation names what it is about.
"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ortcheck.checks import assert_same_structure
from ortcheck.impls import Capability
from ortcheck.strategies import FEATURES, deep_chain, feature_structures, tensors

pytestmark = pytest.mark.requires(Capability.IO_ROUNDTRIP)
CORE_CONTAINERS = FEATURES["core"][1]


def _assert_roundtrip(impl, data):
    flat, schema = impl.flatten(data)
    assert_same_structure(impl.unflatten(flat, schema), data)


@pytest.mark.parametrize("feature", FEATURES)
@given(st.data())
def test_roundtrip(impl, feature, data):
    _assert_roundtrip(impl, data.draw(feature_structures(feature), label="data"))


@given(data=deep_chain(8, inner=tensors(), container_kinds=CORE_CONTAINERS))
def test_roundtrip_deep_nesting(impl, data):
    _assert_roundtrip(impl, data)
