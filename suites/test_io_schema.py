"""Property: schemas see structure, container types, constants, dtypes and ranks — not sizes."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ortcheck.impls import Capability
from ortcheck.strategies import nested_structures
from ortcheck.strategies.mutations import resize_tensors, schema_changing_mutations

pytestmark = pytest.mark.requires(Capability.IO_SCHEMA)


def _schema(impl, data):
    return impl.flatten(data)[1]


@given(data=nested_structures(), grow=st.integers(1, 3))
def test_sizes_do_not_change_schema(impl, data, grow):
    resized = resize_tensors(data, grow)
    assert impl.same_schema(_schema(impl, data), _schema(impl, resized))


@given(st.data())
def test_schema_sees_each_change(impl, data):
    original = data.draw(nested_structures(), label="data")
    kind, site, base, mutated = data.draw(schema_changing_mutations(original), label="mutation")
    assert not impl.same_schema(_schema(impl, base), _schema(impl, mutated)), f"{kind} change at {site} left the schema equal"
