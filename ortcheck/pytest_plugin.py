"""The ortcheck pytest plugin: options, the ``impl`` fixture, markers, profiles and manifests.

Loaded through the ``pytest11`` entry point, so any project that installs ortcheck can run the
suites against its own pipeline with ``pytest --impl NAME``.
"""
from __future__ import annotations

import pytest
from hypothesis import settings

from ortcheck import failures, impls, machine, manifest, profiles, seed, threadbudget, timebound
from ortcheck.fpenv import SubnormalsOn
from ortcheck.heap import FrozenHeap
from ortcheck.impls import DEVICES, Implementation, Options
from ortcheck.report.collector import NOT_APPLICABLE, impl_of
from ortcheck.report.drafts import FindingDrafts

_UNMATCHED_KEY = pytest.StashKey[list]()
_INACTIVE_KEY = pytest.StashKey[list]()
_FINDING_KEY = pytest.StashKey[manifest.Finding]()
_REPORTED_KEY = pytest.StashKey[set]()
MAX_WORKER_RESTARTS = 1000
NOT_AS_RECORDED = "failed, but not as recorded: "
FAILURE_PROPERTY = "ortcheck_failure"  # (exception type, first line) of a failed or xfailed test, for drafts and checks


def not_applicable(reason: str) -> None:
    """Skip as "n/a": the property does not apply to this implementation (the report says so once)."""
    pytest.skip(NOT_APPLICABLE + reason)


def pytest_addoption(parser):
    group = parser.getgroup("ortcheck")
    group.addoption("--impl", default="all",
                    help=f"comma-separated implementations to check, or 'all' (default); valid: {', '.join(impls.names())}")
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


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Before any plugin's ``pytest_configure``: the run's hypothesis seed, which hypothesis' reads."""
    seed.choose(config)


def pytest_configure(config):
    for marker in ("gpu: needs a CUDA device (run with --device cuda)",
                   "nightly: long-running; runs with --nightly",
                   "slow: slow but part of the default run",
                   "requires(capability): skip implementations without this capability"):
        config.addinivalue_line("markers", marker)
    if not config.getoption("hypothesis_profile", default=None):
        settings.load_profile(profiles.default_profile())
    config.ortcheck_impls = selected_impls(config)
    config.ortcheck_device = config.getoption("device")
    if config.ortcheck_device not in DEVICES:
        raise pytest.UsageError(f"--device {config.ortcheck_device!r} is not valid; valid: {', '.join(DEVICES)}")
    config.ortcheck_machine = machine.current(config.ortcheck_device)
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    config.ortcheck_threads = threadbudget.apply(workers)  # before any session sizes its pool from torch's
    if getattr(config.option, "maxworkerrestart", "unset") is None:
        # xdist's default stops replacing crashed workers after 4 per worker and then silently
        # leaves the rest of their tests unrun; here a crash is a finding, and ORTModule has more
        # than 8 of them.
        config.option.maxworkerrestart = str(MAX_WORKER_RESTARTS)
    config.pluginmanager.register(seed.RunSeed(config), "ortcheck-run-seed")
    config.pluginmanager.register(timebound.plugin_for(config), "ortcheck-time-bound")
    if timebound.is_xdist_controller(config):
        config.stash[_REPORTED_KEY] = set()
        config.pluginmanager.register(_ReportedTests(config.stash[_REPORTED_KEY]), "ortcheck-reported-tests")
    config.pluginmanager.register(FrozenHeap(), "ortcheck-frozen-heap")  # ORTModule's gc.collect per export
    config.pluginmanager.register(SubnormalsOn(), "ortcheck-subnormals-on")  # -ffast-math libraries loaded by a test
    if config.getoption("collect_findings") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(FindingDrafts(config.getoption("collect_findings")), "ortcheck-finding-drafts")
    for name in config.getoption("require_impl"):
        reason = impls.get(_known(name)).unavailable_reason()
        if reason:
            raise pytest.UsageError(f"--require-impl {name}: unavailable here: {reason}")


def _known(name: str) -> str:
    if name not in impls.names():
        raise pytest.UsageError(f"unknown implementation {name!r}; valid: {', '.join(impls.names())}, all")
    return name


def selected_impls(config) -> list[str]:
    value = config.getoption("impl")
    if value == "all":
        return impls.names()
    return [_known(name.strip()) for name in value.split(",") if name.strip()]


def pytest_generate_tests(metafunc):
    if "impl" in metafunc.fixturenames:
        names = metafunc.config.ortcheck_impls
        metafunc.parametrize("impl", names, ids=names, indirect=True, scope="session")


@pytest.fixture(scope="session")
def impl(request) -> Implementation:
    """The implementation under test (session-scoped: hypothesis tests may use it)."""
    return impls.get(request.param)


def pytest_runtest_setup(item):
    """Skip, with a one-line reason, an implementation that can't run this test here."""
    callspec = getattr(item, "callspec", None)
    if not callspec or "impl" not in callspec.params:
        return
    implementation = impls.get(callspec.params["impl"])
    reason = implementation.unavailable_reason()
    if reason:
        pytest.skip(f"{implementation.name} unavailable: {reason}")
    for marker in item.iter_markers("requires"):
        missing = [cap for cap in marker.args if cap not in implementation.capabilities()]
        if missing:
            not_applicable(f"{implementation.name} lacks capability {', '.join(missing)}")


@pytest.fixture
def manifest_examples(request) -> tuple[str, ...]:
    """Known failing inputs the implementation's manifest lists for this test (Python expressions):
    a suite runs them before drawing its own, so a recorded finding fails on every run."""
    finding = request.node.stash.get(_FINDING_KEY, None)  # matched once, at collection
    return finding.examples if finding else ()


@pytest.fixture(scope="session")
def device(request) -> str:
    return request.config.ortcheck_device


@pytest.fixture(scope="session")
def options(device) -> Options:
    return Options(device=device)


def active_findings(config, impl_name: str) -> tuple[list[manifest.Finding], list[manifest.Finding]]:
    """(the findings of ``impl_name``'s manifest that hold on this machine and stack, those that don't)."""
    loaded = manifest.load(impls.get(impl_name).manifest_path())
    active = [finding for finding in loaded if finding.active_on(config.ortcheck_machine)]
    return active, [finding for finding in loaded if finding not in active]


def pytest_collection_modifyitems(config, items):
    split = {name: active_findings(config, name) for name in config.ortcheck_impls}
    findings = {name: active for name, (active, _) in split.items()}
    config.stash[_INACTIVE_KEY] = [(name, f) for name, (_, inactive) in split.items() for f in inactive]
    matched = set()
    timeout = _impl_timeout(config)
    for item in items:
        _skip_unselected_markers(config, item)
        callspec = getattr(item, "callspec", None)
        impl_name = callspec.params.get("impl") if callspec else None
        if impl_name:
            item.user_properties.append(("ortcheck_impl", impl_name))
            if timeout:  # enforced from outside the process: a hang may hold the GIL (ortcheck/watchdog.py)
                timebound.bound(item, timeout)
        finding = manifest.first_match(findings.get(impl_name, []), item.nodeid)
        if finding:
            matched.add(finding)
            item.stash[_FINDING_KEY] = finding
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"[{impl_name} manifest] {finding.label}"))
    if config.getoption("findings_check"):
        _keep_only_findings(config, items)
    collected_files = {item.nodeid.split("::")[0] for item in items}
    config.stash[_UNMATCHED_KEY] = [
        (name, f) for name, entries in findings.items() for f in entries
        if f not in matched and any(pattern.split("::")[0] in collected_files for pattern in f.patterns)
    ]


def _keep_only_findings(config, items) -> None:
    """``--findings-check``: deselect every test no active manifest entry expects to fail."""
    kept = [item for item in items if _FINDING_KEY in item.stash]
    deselected = [item for item in items if _FINDING_KEY not in item.stash]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = kept


def _impl_timeout(config) -> float | None:
    value = config.getoption("impl_timeout")
    if value is None:
        return profiles.default_timeout()
    if value < 0:
        raise pytest.UsageError(f"--impl-timeout must be >= 0 seconds (0: no bound), got {value:g}")
    return value or None


def _skip_unselected_markers(config, item):
    if item.get_closest_marker("gpu") and config.ortcheck_device != "cuda":
        item.add_marker(pytest.mark.skip(reason="gpu test: run with --device cuda on a CUDA machine"))
    if item.get_closest_marker("nightly") and not config.getoption("nightly"):
        item.add_marker(pytest.mark.skip(reason="nightly test: run with --nightly"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """An expected failure runs without hypothesis' shrink phase.

    Its manifest entry already holds the minimal reproduction, and shrinking a failing sequence of
    exports costs minutes per run; the test must still fail (strict), just without the search.
    Under ``--findings-check`` it runs its entry's examples alone (no draws) unless the entry says
    its property fails on every draw: then its first draw is the proof.
    """
    if not item.get_closest_marker("xfail"):
        yield
        return
    finding = item.stash.get(_FINDING_KEY, None)
    alone = item.config.getoption("findings_check") and finding is not None and not finding.every_draw
    with profiles.examples_only() if alone else profiles.without_shrinking():
        yield


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Every failure carries its type and first line (drafts and the findings check read them); an
    expected failure that fails otherwise than its manifest entry recorded is a FAIL saying so.

    tryfirst: this wrapper's code after ``yield`` runs after pytest's xfail handling has decided."""
    report = yield
    error = call.excinfo.value if call.excinfo else None
    if error is None or not (report.failed or hasattr(report, "wasxfail")):
        return report
    report.user_properties.append((FAILURE_PROPERTY, (type(error).__name__, failures.first_line(error))))
    finding = item.stash.get(_FINDING_KEY, None)
    if finding and report.skipped and hasattr(report, "wasxfail") and not finding.failure.accepts(error):
        _not_as_recorded(report, finding, failures.describe(error))
    return report


def _not_as_recorded(report, finding: manifest.Finding, what: str) -> None:
    """Turn an expected failure of the wrong kind into a failure naming what happened and what was recorded."""
    del report.wasxfail
    report.outcome = "failed"
    message = NOT_AS_RECORDED + what
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        crash.message = message  # pytest's short summary line
    report.sections.append(("ortcheck manifest", f"{message}\nrecorded ({finding.source}): {finding.failure}\n"
                                                 f"reason: {finding.reason}"))
    report.user_properties.append(("ortcheck_not_as_recorded", message[:300]))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """Under xdist every collected test must have reported: a crash beyond the worker restarts
    would otherwise end the run green with tests never run."""
    reported = session.config.stash.get(_REPORTED_KEY, None)
    if reported is None or exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return
    missing = session.testscollected - len(reported)
    if missing > 0:
        session.config.get_terminal_writer().line(
            f"ortcheck: {missing} of {session.testscollected} collected tests never reported (crashed workers "
            f"beyond --max-worker-restart?)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


class _ReportedTests:
    """The xdist controller's set of tests that reported (for :func:`pytest_sessionfinish`)."""

    def __init__(self, reported: set):
        self.reported = reported

    def pytest_runtest_logreport(self, report):
        self.reported.add(report.nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    """xdist: a worker died running ``crashitem``. When the implementation's manifest expects that
    property to fail, the crash is its expected failure (native crashes are findings too); otherwise
    the report stays a failure naming the property."""
    impl_name = impl_of(crashitem)
    finding = manifest.first_match(active_findings(sched.config, impl_name)[0], crashitem) if impl_name else None
    report.user_properties.append((FAILURE_PROPERTY, (failures.CRASH, "")))
    if finding and finding.failure.accepts_crash():
        report.outcome = "skipped"
        report.wasxfail = f"[{impl_name} manifest] {finding.label} (the worker crashed)"
    elif finding:
        report.user_properties.append(("ortcheck_not_as_recorded", f"{NOT_AS_RECORDED}the worker crashed "
                                                                    f"(recorded: {finding.failure})"))


def pytest_terminal_summary(terminalreporter, config):
    unmatched = config.stash.get(_UNMATCHED_KEY, [])
    if unmatched:
        terminalreporter.section("ortcheck: manifest entries matching no collected test")
        for impl_name, finding in unmatched:
            terminalreporter.write_line(f"{impl_name}: {', '.join(finding.patterns)}  ({finding.source})")
    inactive = config.stash.get(_INACTIVE_KEY, [])
    if inactive:
        terminalreporter.section("ortcheck: manifest entries that don't hold on this machine (their tests must pass)")
        for impl_name, finding in inactive:
            terminalreporter.write_line(f"{impl_name}: {', '.join(finding.patterns)}  where: {finding.condition}")
