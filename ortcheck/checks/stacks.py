"""A layer stack through an implementation against eager, under the float64 oracle: one call, then
another at a different batch size on the same wrapped module (dynamic axes must make that a reuse,
not a wrong answer). Shared by the suites that draw stacks (grad parity, 4-bit layers)."""
from __future__ import annotations

import copy
import functools

import torch

from ortcheck.checks.autocast import autocast_region
from ortcheck.checks.oracle import assert_matches_oracle
from ortcheck.checks.runs import RUNS, input_runs, module_runs


def assert_stack_matches_eager(impl, options, stack, seed: int, autocast: torch.dtype | None = None) -> None:
    """Output, loss and every input and parameter gradient of ``stack`` (a ``LayerStack``) match eager's;
    with ``autocast``, every run's forward under ``torch.autocast`` in that dtype (the float64 runs,
    which autocast leaves alone, stay the truth)."""
    eager = stack.build_module(seed).to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options), seed)
    step = functools.partial(_assert_step_matches, stack, modules, device=options.device, autocast=autocast)
    step(stack.make_inputs(seed), "first call")
    step(stack.make_inputs(seed + 1, batch=stack.batch + 2), "other batch")


def _assert_step_matches(stack, modules, inputs, what, device, autocast=None):
    runs = input_runs(inputs, seed=len(what), device=device)
    with autocast_region(device, autocast):
        results = {run: stack.step(modules[run], runs[run]) for run in RUNS}
    assert_matches_oracle(results, path=what if autocast is None else f"{what} under {autocast} autocast")
