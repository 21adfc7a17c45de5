"""The ``options`` fixture in both gradient delivery modes, for suites about how gradients reach
torch (grad delivery, DDP). A suite opts in by importing it, which overrides the plugin's
``options`` in that module only:

    from ortcheck.delivery_modes import options_in_both_delivery_modes  # noqa: F401
"""
from __future__ import annotations

import dataclasses

import pytest

from ortcheck.impls import Capability, Options
from ortcheck.pytest_plugin import not_applicable

MODES = ("default", "mem_efficient")


@pytest.fixture(name="options", params=MODES)
def options_in_both_delivery_modes(request, impl, options) -> Options:
    """``default``: gradients as autograd outputs; ``mem_efficient``: each parameter's gradient handed
    to torch as the backward produces it (``Options(mem_efficient_grad=True)``), on implementations
    with ``Capability.MEM_EFFICIENT_GRAD`` (n/a elsewhere)."""
    if request.param == "default":
        return options
    if Capability.MEM_EFFICIENT_GRAD not in impl.capabilities():
        not_applicable(f"{impl.name} lacks capability {Capability.MEM_EFFICIENT_GRAD}")
    return dataclasses.replace(options, mem_efficient_grad=True)
