"""The hypothesis seed of a run: chosen once, used by every process of the run, printed, reported.

A random-profile run (``dev``, ``nightly``) that fails or hangs on a user's machine is only worth
something if it can be replayed. Hypothesis draws a fresh random seed per test and prints it only
for some failures (never for a hang or a crashed worker), so the plugin picks the run's seed itself
when the user gave none, hands it to hypothesis as ``--hypothesis-seed`` would, and prints it as
pytest-randomly prints its own: ``--hypothesis-seed=SEED`` with the same profile then draws the same
examples. xdist workers parse the command line again, so they take the controller's seed from
``workerinput`` instead of choosing their own. A derandomized profile (``ci``) draws from each
test's name and ignores any seed; the line says so.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import settings

from ortcheck import profiles

WORKER_KEY = "ortcheck_hypothesis_seed"


def choose(config) -> None:
    """Set ``--hypothesis-seed`` before hypothesis' plugin reads it (``pytest_cmdline_main``)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        config.option.hypothesis_seed = workerinput.get(WORKER_KEY)
    elif config.option.hypothesis_seed is None and not derandomized(config):
        config.option.hypothesis_seed = str(random.SystemRandom().randrange(2**32))


def profile_name(config) -> str:
    return config.getoption("hypothesis_profile", default=None) or profiles.default_profile()


def derandomized(config) -> bool:
    return bool(settings.get_profile(profile_name(config)).derandomize)


def of(config) -> int | str | None:
    """The run's seed (None: derandomized, no seed applies); hypothesis takes any string too."""
    value = None if derandomized(config) else config.option.hypothesis_seed
    return int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else value


def replay_options(config) -> str:
    """The pytest options that draw this run's examples again."""
    seed = of(config)
    return " ".join(([f"--hypothesis-seed={seed}"] if seed is not None else []) +
                    [f"--hypothesis-profile={profile_name(config)}"])


def describe(config) -> str:
    """One line naming the seed and how to replay it, or why there is none."""
    profile, seed = profile_name(config), of(config)
    if seed is None:
        given = config.option.hypothesis_seed
        ignored = f"; --hypothesis-seed={given} has no effect" if given is not None else ""
        return f"hypothesis derandomized (profile {profile}): every run draws the same examples{ignored}"
    return f"hypothesis seed {seed} (profile {profile}; replay: {replay_options(config)})"


class RunSeed:
    """A pytest plugin object: passes the seed to xdist workers and prints it.

    Printed in the header, and again after the results when the header was not shown (``-q``)
    or something failed, where the reader looking for a replay is."""

    def __init__(self, config):
        self.config = config

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:  # xdist controller, before a worker starts
        node.workerinput[WORKER_KEY] = self.config.option.hypothesis_seed

    def pytest_report_header(self, config) -> str:
        return f"ortcheck: {describe(config)}"

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config) -> None:
        if terminalreporter.verbosity < 0 or exitstatus != 0:
            terminalreporter.write_line(f"ortcheck: {describe(config)}")
