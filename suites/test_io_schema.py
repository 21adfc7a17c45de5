"""Property: schemas see structure, container types, constants, dtypes and ranks — not sizes.

Checks: schemas ignore tensor sizes; they change with each kind of change, one parameter per change and kind
of node (`wrap_tensor`, `retype_dict_str`, `constant_int`, `dtype`, `rank`, ...)
"""
import collections

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ortcheck.impls import Capability
from ortcheck.nested import sites
from ortcheck.strategies import FEATURES, containers, feature_exemplar, feature_structures
from ortcheck.strategies.mutations import MUTATIONS, resize_tensors, schema_changing_mutations

pytestmark = pytest.mark.requires(Capability.IO_SCHEMA)
# what a recorded example may name: torch, collections and the container and enum types the strategies draw
_EXAMPLE_NAMES = {"torch": torch, "collections": collections} | {
    name: value for name, value in vars(containers).items()
    if isinstance(value, type) and value.__module__ == containers.__name__}


def _schema(impl, data):
    return impl.flatten(data)[1]


@pytest.mark.parametrize("feature", FEATURES)
def test_sizes_do_not_change_schema(impl, feature):
    _assert_sizes_do_not_change_schema(impl, feature_exemplar(feature), grow=1)  # every kind of the feature, first

    @given(data=st.data(), grow=st.integers(1, 3))
    def drawn(data, grow):
        _assert_sizes_do_not_change_schema(impl, data.draw(feature_structures(feature), label="data"), grow)

    drawn()


def _assert_sizes_do_not_change_schema(impl, original, grow):
    assert impl.same_schema(_schema(impl, original), _schema(impl, resize_tensors(original, grow)))


@pytest.mark.parametrize("change", MUTATIONS)
def test_schema_sees_each_change(impl, change, manifest_examples):
    for text in manifest_examples:  # (base, mutated): each runs where its base holds a node this change applies to
        base, mutated = eval(text, _EXAMPLE_NAMES)
        if not sites(base, MUTATIONS[change].accept):
            continue
        _assert_schema_changes(impl, base, mutated, f"{change} change in manifest example {text}")

    @given(st.data())
    def drawn(data):
        original = data.draw(feature_structures("python_scalars"), label="data")
        _, site, base, mutated = data.draw(schema_changing_mutations(original, kinds=(change,)), label="mutation")
        _assert_schema_changes(impl, base, mutated, f"{change} change at {site}")

    drawn()


def _assert_schema_changes(impl, base, mutated, what):
    assert not impl.same_schema(_schema(impl, base), _schema(impl, mutated)), f"{what} left the schema equal"
