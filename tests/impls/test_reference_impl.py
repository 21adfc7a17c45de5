"""Tests of the ``reference`` adapter: options mapped or refused by name, counters mapped back."""
from __future__ import annotations

import re

import pytest
import torch

from ortcheck import impls
from ortcheck.impls import Observations, Options, UnsupportedOptionError

IMPL = impls.get("reference")
REASON = IMPL.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"reference unavailable: {REASON}")


def test_an_option_the_pipeline_does_not_implement_is_refused_by_name():
    with pytest.raises(UnsupportedOptionError, match=re.escape("does not implement Options(skip_checks=True)")):
        IMPL.wrap(torch.nn.Linear(2, 2), Options(skip_checks=True))


def test_mapped_options_reach_the_pipeline_and_counters_come_back():
    wrapped = IMPL.wrap(torch.nn.Linear(2, 2), Options(fallback="auto", memory_opt_level=2, mem_efficient_grad=True))
    assert wrapped._options.fallback == "auto" and wrapped._options.device == "cpu"
    assert wrapped._options.memory_opt_level == 2 and wrapped._options.mem_efficient_grad
    wrapped(torch.randn(3, 2, requires_grad=True)).sum().backward()
    assert IMPL.observe(wrapped) == Observations(exports=1, gradient_builds=1, sessions=1, fallbacks=0,
                                                 last_reason="first forward")


def test_refusals_are_the_pipelines_own_errors():
    """What the module-semantics suite accepts as a refusal: hooks, export and gradient-rule refusals."""
    from reference.autodiff import UnsupportedOpError
    from reference.export import ExportError
    from reference.module.wrapper import UnsupportedHookError

    assert set(IMPL.refusal_errors()) == {ExportError, UnsupportedOpError, UnsupportedHookError}
    wrapped = IMPL.wrap(torch.nn.Sequential(torch.nn.Linear(2, 2)))
    wrapped.module[0].register_forward_hook(lambda *_: None)
    with pytest.raises(IMPL.refusal_errors(), match="forward hook on Linear"):
        wrapped(torch.randn(3, 2))
