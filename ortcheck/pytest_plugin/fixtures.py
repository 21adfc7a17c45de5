"""What a suite gets from the plugin: the ``impl`` under test, the ``device`` and wrapping ``options``,
and a skip (or an n/a) where an implementation can't run a test or a property doesn't apply to it.

A suite about how gradients reach torch (grad delivery, DDP) says so with the ``both_delivery_modes``
marker, and ``options`` comes once per mode: no suite overrides a plugin fixture."""
from __future__ import annotations

import dataclasses

import pytest

from ortcheck import impls
from ortcheck.impls import Capability, Implementation, Options
from ortcheck.pytest_plugin import not_applicable
from ortcheck.report.collector import REFUSED

# ``default``: gradients as autograd outputs; ``mem_efficient``: each parameter's gradient handed to
# torch as the backward produces it (``Options(mem_efficient_grad=True)``), n/a on implementations
# without ``Capability.MEM_EFFICIENT_GRAD``.
DELIVERY_MODES = ("default", "mem_efficient")
IMPL_PROPERTY = "ortcheck_impl"  # the implementation of a test, for the report


def pytest_generate_tests(metafunc):
    """Delivery modes first, then implementations: test ids read ``[default-reference-...]``."""
    if metafunc.definition.get_closest_marker("both_delivery_modes") and "options" in metafunc.fixturenames:
        metafunc.parametrize("options", DELIVERY_MODES, ids=DELIVERY_MODES, indirect=True, scope="function")
    if "impl" in metafunc.fixturenames:
        names = metafunc.config.ortcheck_impls
        metafunc.parametrize("impl", names, ids=names, indirect=True, scope="session")


@pytest.fixture(scope="session")
def impl(request) -> Implementation:
    """The implementation under test (session-scoped: hypothesis tests may use it)."""
    return impls.get(request.param)


@pytest.fixture(scope="session")
def device(request) -> str:
    return request.config.ortcheck_device


@pytest.fixture(scope="session")
def options(request) -> Options:
    """The wrapping options: the command line's; under ``both_delivery_modes``, the mode's."""
    mode = getattr(request, "param", "default")
    return dataclasses.replace(request.config.ortcheck_options, mem_efficient_grad=mode == "mem_efficient")


@pytest.fixture
def record_refusal(request):
    """``record_refusal(message)``: the implementation refused (by name, as the contract allows) part
    of what the test checks. The test still passes, but its outcome in the reports is ``refused``
    with the message's first line, never ``pass``: a pipeline refusing everything is not green."""
    def record(message: str) -> None:
        if not any(name == REFUSED for name, _ in request.node.user_properties):
            request.node.user_properties.append((REFUSED, (str(message).strip().splitlines() or [""])[0][:200]))

    return record


def pytest_collection_modifyitems(items):
    for item in items:
        name = _impl_name(item)
        if name:
            item.user_properties.append((IMPL_PROPERTY, name))


def pytest_runtest_setup(item):
    """Skip, with a one-line reason, an implementation that can't run this test here; n/a where it
    lacks a capability the test requires."""
    name = _impl_name(item)
    if not name:
        return
    implementation = impls.get(name)
    reason = implementation.unavailable_reason()
    if reason:
        pytest.skip(f"{implementation.name} unavailable: {reason}")
    for marker in item.iter_markers("requires"):
        _require(implementation, marker.args)
    if item.callspec.params.get("options") == "mem_efficient":
        _require(implementation, (Capability.MEM_EFFICIENT_GRAD,))


def _require(implementation: Implementation, capabilities) -> None:
    missing = [cap for cap in capabilities if cap not in implementation.capabilities()]
    if missing:
        not_applicable(f"{implementation.name} lacks capability {', '.join(missing)}")


def _impl_name(item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("impl") if callspec else None
