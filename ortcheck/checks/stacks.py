"""A layer stack through an implementation against eager, under the float64 oracle: one call, then
another at a different batch size on the same wrapped module (dynamic axes must make that a reuse,
not a wrong answer). Shared by the suites that draw stacks (grad parity, 4-bit layers)."""
from __future__ import annotations

import copy

from ortcheck.checks.oracle import assert_matches_oracle
from ortcheck.checks.runs import RUNS, input_runs, module_runs


def assert_stack_matches_eager(impl, options, stack, seed: int) -> None:
    """Output, loss and every input and parameter gradient of ``stack`` (a ``LayerStack``) match eager's."""
    eager = stack.build_module(seed).to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options), seed)
    _assert_step_matches(stack, modules, stack.make_inputs(seed), "first call", options.device)
    _assert_step_matches(stack, modules, stack.make_inputs(seed + 1, batch=stack.batch + 2), "other batch",
                         options.device)


def _assert_step_matches(stack, modules, inputs, what, device):
    runs = input_runs(inputs, seed=len(what), device=device)
    assert_matches_oracle({run: stack.step(modules[run], runs[run]) for run in RUNS}, path=what)
