"""A layer stack through an implementation against eager, under the float64 oracle: one call, then
another at a different batch size on the same wrapped module (dynamic axes must make that a reuse,
not a wrong answer). Shared by the suites that draw stacks (grad parity, 4-bit layers)."""
from __future__ import annotations

import copy
import functools

import torch

from ortcheck.checks.autocast import autocast_region, eager_refusal
from ortcheck.checks.oracle import assert_matches_oracle
from ortcheck.checks.runs import RUNS, fresh_leaves, input_runs, module_runs
from ortcheck.nested import map_leaves


def assert_stack_matches_eager(impl, options, stack, seed: int, autocast: torch.dtype | None = None,
                               held_in: torch.dtype | None = None) -> None:
    """Output, loss and every input and parameter gradient of ``stack`` (a ``LayerStack``) match eager's;
    with ``autocast``, every run's forward under ``torch.autocast`` in that dtype (the float64 runs,
    which autocast leaves alone, stay the truth); with ``held_in``, the stack's parameters and float
    inputs in that dtype, as ``model.to(torch.bfloat16)`` trains (the float64 twins start from the
    very same values)."""
    eager = stack.build_module(seed).to(options.device, held_in)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options), seed)
    step = functools.partial(_assert_step_matches, stack, modules, device=options.device, autocast=autocast)
    step(_cast(stack.make_inputs(seed), held_in), "first call")
    step(_cast(stack.make_inputs(seed + 1, batch=stack.batch + 2), held_in), "other batch")


def eager_refuses(stack, seed: int, held_in: torch.dtype, device: str) -> str | None:
    """Why eager itself cannot train ``stack`` held in ``held_in`` on ``device`` (:func:`eager_refusal`), or None."""
    module = stack.build_module(seed).to(device, held_in)
    inputs = fresh_leaves(_cast(stack.make_inputs(seed), held_in), device)
    return eager_refusal(lambda: stack.step(module, inputs), f"it held in {held_in} on {device}")


def _cast(inputs, dtype: torch.dtype | None):
    if dtype is None:
        return inputs
    return map_leaves(inputs, lambda t: t.detach().to(dtype).requires_grad_(t.requires_grad)
                      if isinstance(t, torch.Tensor) and t.is_floating_point() else t)


def _assert_step_matches(stack, modules, inputs, what, device, autocast=None):
    runs = input_runs(inputs, seed=len(what), device=device)
    with autocast_region(device, autocast):
        results = {run: stack.step(modules[run], runs[run]) for run in RUNS}
    assert_matches_oracle(results, path=what if autocast is None else f"{what} under {autocast} autocast")
