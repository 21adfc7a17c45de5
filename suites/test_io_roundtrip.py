"""Property: unflatten(flatten(x)) is x — same container types, constants and tensor objects.

Checks: `unflatten(flatten(x))` gives back the same container types, constants and tensor objects, per
feature of what users pass to `forward` (`ortcheck.strategies.FEATURES`: core containers; Python scalars;
enums (`Enum`, `IntEnum`, `StrEnum`); torch's own `torch.Size`, `dtype`, `device` and `torch.return_types`;
int keys; dataclasses; `defaultdict`, `deque`, `UserDict` and dict/list/tuple subclasses; transformers'
`BatchEncoding` and `ModelOutput`s), each feature's exemplar (every kind at once) before the draws

Parametrized by feature (``ortcheck.strategies.FEATURES``): a core every pipeline should handle,
then one family of extra leaves or containers each (Python scalars, enums, torch's own types, int
keys, dataclasses, standard-library containers and subclasses, transformers' own), so a deviation
names what it is about. Each feature's exemplar, every kind of it at once, runs before the draws.
"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ortcheck.checks import assert_same_structure
from ortcheck.impls import Capability
from ortcheck.strategies import FEATURES, deep_chain, feature_exemplar, feature_structures, tensors

pytestmark = pytest.mark.requires(Capability.IO_ROUNDTRIP)
CORE_CONTAINERS = FEATURES["core"][1]


def _assert_roundtrip(impl, data):
    flat, schema = impl.flatten(data)
    assert_same_structure(impl.unflatten(flat, schema), data)


@pytest.mark.parametrize("feature", FEATURES)
def test_roundtrip(impl, feature):
    _assert_roundtrip(impl, feature_exemplar(feature))

    @given(st.data())
    def drawn(data):
        _assert_roundtrip(impl, data.draw(feature_structures(feature), label="data"))

    drawn()


@given(data=deep_chain(8, inner=tensors(), container_kinds=CORE_CONTAINERS))
def test_roundtrip_deep_nesting(impl, data):
    _assert_roundtrip(impl, data)
