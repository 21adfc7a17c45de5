"""Hypothesis profiles: selection from the environment, and the no-shrink context for expected failures."""
import unittest

import pytest
from hypothesis import Phase, given, settings, strategies as st

from ortcheck import profiles


def test_without_shrinking_drops_only_the_shrink_phase_and_restores_the_profile():
    before = settings.get_current_profile_name()
    with profiles.without_shrinking():
        assert Phase.shrink not in settings.default.phases
        assert Phase.generate in settings.default.phases
        assert settings.default.max_examples == settings.get_profile(before).max_examples
    assert settings.get_current_profile_name() == before
    assert Phase.shrink in settings.default.phases


def test_a_failure_inside_the_context_is_reported_unshrunk():
    seen = []
    with profiles.without_shrinking():
        @settings(derandomize=True, database=None)  # inherits the no-shrink default active here
        @given(st.integers(min_value=0))
        def fails_on_large(n):
            seen.append(n)
            assert n < 1000

        with pytest.raises(AssertionError):
            fails_on_large()
    first_failure = next(n for n in seen if n >= 1000)
    assert set(seen[seen.index(first_failure):]) == {first_failure}  # replayed, never searched below
    assert first_failure > 1000  # what shrinking would have reported


@pytest.mark.parametrize("value", ["", "bogus"])
def test_an_unknown_profile_name_in_the_environment_is_an_error(monkeypatch, value):
    monkeypatch.setenv(profiles.ENV_VAR, value)
    monkeypatch.delenv("CI", raising=False)
    if value:
        with pytest.raises(ValueError, match="bogus.*valid: dev, ci, nightly"):
            profiles.default_profile()
    else:
        assert profiles.default_profile() == "dev"


def test_random_profiles_stay_random_where_hypothesis_defaults_to_its_ci_profile():
    """hypothesis makes its derandomized "ci" profile the default when the environment says CI; our
    random profiles must not inherit that (a dev run on a CI machine would draw nothing random)."""
    from hypothesis import settings

    from ortcheck import profiles  # noqa: F401 - registers the profiles

    assert not settings.get_profile("dev").derandomize and not settings.get_profile("nightly").derandomize
    assert settings.get_profile("ci").derandomize


_SEEN: list[int] = []


@settings(derandomize=True, database=None)  # fixed now, at import: the profile active later cannot reach it
@given(st.integers(min_value=0))
def _fails_on_large(n):
    _SEEN.append(n)
    assert n < 1000


@pytest.mark.parametrize("context", [profiles.without_shrinking, profiles.examples_only])
def test_a_property_decorated_at_import_gets_the_contexts_phases_and_gets_its_own_back(context):
    own = _fails_on_large._hypothesis_internal_use_settings
    _SEEN.clear()
    with context(_fails_on_large):
        assert Phase.explain not in _fails_on_large._hypothesis_internal_use_settings.phases
        if context is profiles.without_shrinking:
            with pytest.raises(AssertionError):
                _fails_on_large()
            first_failure = next(n for n in _SEEN if n >= 1000)
            assert set(_SEEN[_SEEN.index(first_failure):]) == {first_failure}  # neither shrunk nor explained
        else:
            with pytest.raises(unittest.SkipTest, match="no test cases"):  # no explicit example, no draw
                _fails_on_large()
            assert _SEEN == []
    assert _fails_on_large._hypothesis_internal_use_settings is own
