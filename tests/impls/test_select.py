"""`--impl` values: what each word selects, so tox and CI jobs name no implementation list."""
import pytest

from ortcheck import impls


def test_names_keep_the_order_given_and_each_once():
    assert impls.select("reference, eager,reference") == ["reference", "eager"]


def test_all_is_every_registered_implementation_and_available_those_that_run_here():
    assert impls.select("all") == impls.names()
    assert impls.select("available") == [n for n in impls.names() if impls.get(n).unavailable_reason() is None]


def test_a_minus_leaves_one_out_of_what_came_before():
    assert impls.select("all,-eager") == [n for n in impls.names() if n != "eager"]
    assert impls.select("eager,-eager,reference") == ["reference"]


@pytest.mark.parametrize("spec", ["nope", "eager,nope", "-nope", "", "eager,-eager"])
def test_a_value_naming_nothing_valid_is_an_error_listing_the_valid_words(spec):
    with pytest.raises(ValueError, match=f"valid: {', '.join(impls.names())}, all, available, -NAME"):
        impls.select(spec)
