"""The plugin's command-line options and markers, and what they select: implementations, the wrapping
options (``--device``, validated by :class:`~ortcheck.impls.Options` itself), machine."""
from __future__ import annotations

import pytest
from hypothesis import settings

from ortcheck import impls, machine, profiles, seed
from ortcheck.impls import DEVICES, Options

MARKERS = ("gpu: needs a CUDA device (run with --device cuda)",
           "nightly: long-running; runs with --nightly",
           "slow: slow but part of the default run",
           "requires(capability): skip implementations without this capability",
           "both_delivery_modes: run with the options of both gradient delivery modes (default, mem_efficient)")


def pytest_addoption(parser):
    group = parser.getgroup("ortcheck")
    group.addoption("--impl", default="available",
                    help="implementations to check: comma-separated names, 'available' (default: those that can run "
                         "here), 'all' (the others skip saying why), '-NAME' leaving one out; valid names: "
                         f"{', '.join(impls.names())}")
    group.addoption("--require-impl", action="append", default=[], metavar="NAME",
                    help="fail (instead of skipping) when this implementation is unavailable here")
    group.addoption("--device", default="cpu", help=f"device to run on; valid: {', '.join(DEVICES)}")
    group.addoption("--nightly", action="store_true", help="also run tests marked nightly (and longer convergence runs)")
    group.addoption("--update-goldens", action="store_true",
                    help="convergence: rewrite golden files (atomically) for runs whose parity with eager passed")
    group.addoption("--golden-dir", default=None, help="convergence: folder of golden files (default: <rootdir>/golden)")
    group.addoption("--convergence-report", default=None, metavar="DIR",
                    help="convergence: write a PNG and a CSV per case and implementation into DIR")
    group.addoption("--collect-findings", default=None, metavar="FILE",
                    help="write a draft manifest entry (test glob, first line of the failure, shrunk example) for "
                         "every unexpected failure into FILE")
    group.addoption("--impl-timeout", type=float, default=None, metavar="SECONDS",
                    help="fail a property that runs implementation code for longer than this (a hang); 0: no bound. "
                         f"Default {profiles.TIMEOUT_PER_100_EXAMPLES:g} s per 100 examples of the hypothesis profile. "
                         "Run with xdist (-n) so a hang or a crash costs one property, not the run")
    group.addoption("--findings-check", action="store_true",
                    help="run only the tests the manifests expect to fail, each with its entry's examples alone "
                         "(hypothesis draws nothing, except for entries marked every_draw): what `ortcheck findings "
                         "--check` runs")
    group.addoption("--prove-findings", action="store_true",
                    help="run every test, each expected failure with its entry's examples alone as --findings-check "
                         "does, and judge at the end every manifest entry whose tests ran as `ortcheck findings "
                         "--check` does (fails as recorded, numeric ones by 4x), failing the run otherwise")
    group.addoption("--no-shrink", action="store_true",
                    help="report each property's first failing example as drawn: no shrink or explain phase (a "
                         "verdict in seconds where the minimal example costs minutes of re-exports; expected "
                         "failures always run so)")


def pytest_configure(config):
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    if not config.getoption("hypothesis_profile", default=None):
        settings.load_profile(profiles.default_profile())
    config.ortcheck_impls = selected_impls(config)
    config.ortcheck_options = command_line_options(config)
    config.ortcheck_device = config.ortcheck_options.device
    config.ortcheck_machine = machine.current(config.ortcheck_device, seed.profile_name(config))
    for name in config.getoption("require_impl"):
        reason = impls.get(_known(name)).unavailable_reason()
        if reason:
            raise pytest.UsageError(f"--require-impl {name}: unavailable here: {reason}")


def command_line_options(config) -> Options:
    """The wrapping options the command line asks for (the ``options`` fixture starts from these);
    :class:`Options` validates them, and a value it refuses is a usage error in its words."""
    try:
        return Options(device=config.getoption("device"))
    except ValueError as error:
        raise pytest.UsageError(f"--device: {error}") from None


def _known(name: str) -> str:
    if name not in impls.names():
        raise pytest.UsageError(f"unknown implementation {name!r}; valid: {', '.join(impls.names())}")
    return name


def selected_impls(config) -> list[str]:
    try:
        return impls.select(config.getoption("impl"))
    except ValueError as error:
        raise pytest.UsageError(f"--impl: {error}") from None


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` or ``nightly`` skip unless the options ask for them."""
    for item in items:
        if item.get_closest_marker("gpu") and config.ortcheck_device != "cuda":
            item.add_marker(pytest.mark.skip(reason="gpu test: run with --device cuda on a CUDA machine"))
        if item.get_closest_marker("nightly") and not config.getoption("nightly"):
            item.add_marker(pytest.mark.skip(reason="nightly test: run with --nightly"))
