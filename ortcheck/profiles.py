"""Hypothesis profiles: ``dev`` (quick, local), ``ci`` (derandomized), ``nightly`` (many examples).

Heavy properties (each example exports a graph) run a fraction of the profile's examples via
:func:`scaled`, so the ratio between profiles holds for them too.
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator

from hypothesis import HealthCheck, Phase, settings

PROFILES = ("dev", "ci", "nightly")
ENV_VAR = "ORTCHECK_HYPOTHESIS_PROFILE"
_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]

# Each profile from hypothesis' own defaults, never from the profile in force: where the environment
# says CI, hypothesis loads its built-in derandomized "ci" profile as the default, and a `dev` built
# on it was derandomized too (a random-seed run on a CI machine drew nothing random).
_BASE = settings.get_profile("default")
settings.register_profile("dev", _BASE, max_examples=30, deadline=None, derandomize=False,
                          suppress_health_check=_SLOW_OK)
# ``ci`` draws more than ``dev``, whose 30 random draws catch every control (tests/harness/test_plugin.py),
# and far fewer than ``nightly``: 50 examples kept the README's test command within CI's time (issue
# "the harness's own speed", docs/speed.md), where 100 did not.
settings.register_profile("ci", _BASE, max_examples=50, deadline=None, derandomize=True, database=None,
                          print_blob=True, suppress_health_check=_SLOW_OK)
settings.register_profile("nightly", _BASE, max_examples=1000, deadline=None, derandomize=False,
                          suppress_health_check=_SLOW_OK)


def default_profile() -> str:
    """The profile named by the environment; ``ci`` on CI machines, else ``dev``."""
    name = os.environ.get(ENV_VAR) or ("ci" if os.environ.get("CI") else "dev")
    if name not in PROFILES:
        raise ValueError(f"{ENV_VAR}={name!r} is not a profile; valid: {', '.join(PROFILES)}")
    return name


# The per-property time bound (a hang) unless --impl-timeout says otherwise: generous, and growing
# with the profile's examples. The slowest ci property takes about 1 minute on 2 cores.
TIMEOUT_PER_100_EXAMPLES = 900.0


def default_timeout() -> float:
    return TIMEOUT_PER_100_EXAMPLES * max(1.0, settings().max_examples / 100)


def scaled(fraction: float) -> settings:
    """Settings running ``fraction`` of the active profile's examples (at least 10)."""
    return settings(max_examples=max(10, int(settings().max_examples * fraction)))


def costly(fraction: float) -> settings:
    """:func:`scaled` for properties whose every example exports a graph: a failure shrinks to one
    reproduction and stops there (no hunt for further bugs, no explain phase: each replay re-exports)."""
    phases = [phase for phase in settings().phases if phase is not Phase.explain]
    return settings(scaled(fraction), report_multiple_bugs=False, phases=phases)


@contextlib.contextmanager
def _phases(suffix: str, keep, test=None) -> Iterator[None]:
    """The active profile with only the phases ``keep`` accepts, for tests run inside this context
    (nested ``@given`` and :func:`scaled` settings made there inherit them), and for ``test`` (a
    ``@given`` function) too: its ``@settings`` were fixed when its module was imported."""
    active, previous = settings.default, settings.get_current_profile_name()
    name = f"{previous}-{suffix}"

    def kept(of: settings) -> list[Phase]:
        return [phase for phase in of.phases if keep(phase)]

    settings.register_profile(name, parent=active, phases=kept(active))
    settings.load_profile(name)
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if own is not None:
        test._hypothesis_internal_use_settings = settings(own, phases=kept(own))
    try:
        yield
    finally:
        settings.load_profile(previous)
        if own is not None:
            test._hypothesis_internal_use_settings = own


def without_shrinking(test=None) -> contextlib.AbstractContextManager:
    """The active profile (and ``test``'s settings) minus the shrink phase and the explain phase after
    it, which replays the failing example with each part varied: hundreds of replays, each an export."""
    return _phases("no-shrink", lambda phase: phase not in (Phase.shrink, Phase.explain), test)


def examples_only(test=None) -> contextlib.AbstractContextManager:
    """No draws at all: a property runs only what it runs before drawing (a manifest entry's examples,
    explicit ``@example``s) and a property that draws nothing runs whole."""
    return _phases("examples-only", lambda phase: phase is Phase.explicit, test)
